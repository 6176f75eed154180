"""Ingest CPU with failures from evidence, against a baseline checkout (main), side by side.

Two traces: a plain-OpenTelemetry fleet (OTLP JSON from real SDK spans, every
failure scenario of :mod:`tracekit.simulation.otel_fleet`) and a simulated v1
fleet (JSONL). Each ingest runs in a fresh process into a fresh store,
alternating this checkout and the baseline; the medians of CPU seconds (user +
system) are compared. The baseline imports its own code (``PYTHONPATH``) with
this venv's packages.

Run::

    git worktree add --detach /tmp/base-failures main
    PYTHONPATH=$PWD .venv/bin/python bench/bench_failures.py --baseline /tmp/base-failures
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
INGEST = "import sys\nfrom tracekit.store import Store\nwith Store(sys.argv[2]) as s:\n    s.ingest(sys.argv[1])\n"


def _run(trace: Path, code: Path, db: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", INGEST, str(trace), str(db)], env=env, cwd="/tmp",
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(
            f"ingest failed with {code}: {proc.stderr.read().decode() if proc.stderr else ''}"
        )
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def _traces(tmp: Path, otel_runs: int, v1_runs: int) -> dict[str, Path]:
    from tracekit.simulation import simulate
    from tracekit.simulation.otel_export import otlp_json_lines
    from tracekit.simulation.otel_fleet import otel_fleet

    otel = tmp / "otel.otlp.jsonl"
    spans, _ = otel_fleet(otel_runs, seed=11)
    otel.write_text("\n".join(otlp_json_lines(spans)) + "\n")
    v1 = tmp / "v1.jsonl"
    simulate(v1, runs=v1_runs, seed=11)
    return {
        f"plain-OTel fleet, {otel_runs} runs (OTLP JSON)": otel,
        f"v1 fleet, {v1_runs} runs": v1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--otel-runs", type=int, default=2000)
    parser.add_argument("--v1-runs", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for label, trace in _traces(tmp, args.otel_runs, args.v1_runs).items():
            cpu: dict[str, list[float]] = {"main": [], "this": []}
            for n in range(args.repeat):
                for side, code in (("main", args.baseline), ("this", HERE)):
                    db = tmp / f"{side}-{n}.duckdb"
                    cpu[side].append(_run(trace, code, db)[1])
                    db.unlink()
            a, b = statistics.median(cpu["main"]), statistics.median(cpu["this"])
            print(
                f"{label}: ingest CPU median main {a:.2f}s, this {b:.2f}s, {100 * (b / a - 1):+.1f}%"
            )


if __name__ == "__main__":
    main()
