"""A/B: this checkout's commands against an older checkout's, side by side in one run.

The machine is shared and noisy, so the two sides alternate, each command runs in a
fresh process, and both wall time and CPU time (user + system, ``os.wait4``) are
reported as medians. The older side runs through the same interpreter with
``PYTHONPATH`` set to its checkout (from ``/tmp``, so the current directory does not
shadow it); its dependencies are this venv's.

Run (the baseline a worktree of the older commit; stores built by bench_fleet.py)::

    git worktree add --detach /tmp/tk-before fa3a8de
    .venv/bin/python bench/bench_ab.py --baseline /tmp/tk-before \
        --fleet-jsonl FLEET_1M.jsonl --store bench/out/fleet-200000.duckdb \
        --baseline-store /tmp/tk-before/bench/out/fleet-200000.duckdb

``--classify-baseline`` makes the baseline's ingest call ``classify_store`` after
``Store.ingest``, as its ``tracekit ingest`` did (the store now classifies as it writes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
INGEST = "import sys\nfrom tracekit import Store\nwith Store(sys.argv[2]) as s:\n    s.ingest(sys.argv[1])\n"
INGEST_CLASSIFY = (
    INGEST + "    from tracekit.failures import classify_store\n    classify_store(s)\n"
)


def run(argv: list[str], code: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one command run with ``code`` first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(code), "NO_COLOR": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/tmp"
    )
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"failed: {' '.join(argv)} (PYTHONPATH={code})")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def cases(args: argparse.Namespace, side: str) -> list[tuple[str, list[str]]]:
    tk = str(BIN / "tracekit")
    store = args.baseline_store if side == "before" else args.store
    found = [("tracekit tree (1M events)", [tk, "tree", str(args.trace), "--color", "never"])]
    if store:
        found.append(
            ("tracekit fleet --format json", [tk, "fleet", "--db", str(store), "--format", "json"])
        )
        found.append(
            ("tracekit fleet (tables)", [tk, "fleet", "--db", str(store), "--color", "never"])
        )
    if args.fleet_jsonl:
        code = INGEST_CLASSIFY if side == "before" and args.classify_baseline else INGEST
        found.append(
            ("Store.ingest, fresh store", [sys.executable, "-c", code, str(args.fleet_jsonl)])
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument(
        "--trace", type=Path, default=Path(tempfile.gettempdir()) / "tk-ab-tree.jsonl"
    )
    parser.add_argument("--fleet-jsonl", type=Path)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--baseline-store", type=Path)
    parser.add_argument("--classify-baseline", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.trace.exists():
        sys.path.insert(0, str(HERE / "bench"))
        from bench_tree import make_trace

        make_trace(args.trace, 1_000_000)
    sides = {"before": args.baseline, "after": HERE}
    times: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for _ in range(args.repeat):
        for side, code in sides.items():
            for label, argv in cases(args, side):
                if argv[-1] == str(args.fleet_jsonl):
                    argv = [*argv, str(Path(tempfile.mkdtemp()) / "s.duckdb")]
                times.setdefault(label, {}).setdefault(side, []).append(run(argv, code))
    print(
        f"medians of {args.repeat}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for label, by in times.items():
        (bw, bc), (aw, ac) = (
            (statistics.median(x[0] for x in by[s]), statistics.median(x[1] for x in by[s]))
            for s in ("before", "after")
        )
        print(
            f"  {label:30s} before {bw:6.2f} s ({bc:6.2f} CPU)  after {aw:6.2f} s ({ac:6.2f} CPU)"
            f"  CPU {ac / bc:5.2f}x"
        )


if __name__ == "__main__":
    main()
