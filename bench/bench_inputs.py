"""Peak memory and time of `tracekit ingest` and `tracekit tree` on hostile inputs.

Usage:
    .venv/bin/python bench/bench_inputs.py [--repeat 3] [--dir DIR]

Inputs (written once into DIR):

* small: a 6-line trace, the floor (imports, DuckDB, the store's files);
* line50: a 50 MB valid record between two good lines (over the line limit);
* gzip0.75 / gzip3: gzip files that inflate to 0.75 GB and 3 GB of one line
  without a newline, after a good line (time must grow linearly: ~4x).

Each command runs in a fresh child process (a fresh store for ingest), and
its peak RSS comes from ``os.wait4``. Figures are medians over ``--repeat``;
ratios are against the small input in the same run. The aim: peak RSS under
the store's memory limit (1 GB) plus 256 MB.

``--read-ab FILE --baseline CHECKOUT`` instead times the ingest's read path
alone (chunks of whole lines and their Arrow tables, no DuckDB) on FILE,
this tree's code against ``CHECKOUT/tracekit/store/sources.py`` (a checkout
of the previous code), alternating in one process, in CPU seconds so that a
loaded machine shifts both sides alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

BIN = Path(sys.executable).parent
GOOD = (
    json.dumps({"type": "run.start", "ts": 1, "runId": "r", "agent": "a"})
    + "\n"
    + json.dumps({"type": "node", "ts": 2, "runId": "r", "id": "s"})
    + "\n"
).encode()


def _write_inputs(root: Path) -> dict[str, Path]:
    small = root / "small.jsonl"
    small.write_bytes(GOOD * 3)
    line50 = root / "line50.jsonl"
    if not line50.exists():
        big = {"type": "node", "ts": 3, "runId": "r", "id": "x", "attrs": {"a": "x" * 50_000_000}}
        line50.write_bytes(GOOD + json.dumps(big).encode() + b"\n" + GOOD)
    inputs = {"small": small, "line50": line50}
    for name, gib in (("gzip0.75", 0.75), ("gzip3", 3.0)):
        inputs[name] = _gzip_bomb(root / f"{name}.jsonl.gz", int(gib * 1024))
    return inputs


def _gzip_bomb(path: Path, mib: int) -> Path:
    if path.exists():
        return path
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header
    block = b"x" * (1 << 20)
    with path.open("wb") as out:
        out.write(packer.compress(GOOD))
        for _ in range(mib):
            out.write(packer.compress(block))
        out.write(packer.flush())
    return path


def _run(argv: list[str]) -> tuple[float, float]:
    """Run a command; return its wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed: {stderr}")
    return seconds, usage.ru_maxrss / 1024


def _measure(command: str, path: Path, work: Path, repeat: int) -> tuple[float, float]:
    times, peaks = [], []
    for n in range(repeat):
        if command == "ingest":
            db = work / f"bench-{path.stem}-{n}.duckdb"
            argv = [str(BIN / "tracekit"), "ingest", str(path), "--db", str(db)]
        else:
            argv = [str(BIN / "tracekit"), "tree", str(path)]
        seconds, peak = _run(argv)
        times.append(seconds)
        peaks.append(peak)
        for leftover in work.glob("bench-*.duckdb*"):
            leftover.unlink()
    return statistics.median(times), statistics.median(peaks)


def _read_path(module: object, path: Path) -> float:
    """CPU seconds to cut a file into chunks and build their tables."""
    started = time.process_time()
    with path.open("rb") as stream:
        chunks = module.read_chunks(stream, start=0, first_line=1, final=True)  # type: ignore[attr-defined]
        for chunk in chunks:
            module.lines_table(chunk.data, chunk.first_line)  # type: ignore[attr-defined]
    return time.process_time() - started


def _read_ab(path: Path, baseline: Path, repeat: int) -> None:
    import importlib.util

    from tracekit.store import sources

    spec = importlib.util.spec_from_file_location(
        "baseline_sources", baseline / "tracekit" / "store" / "sources.py"
    )
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old  # dataclasses look their module up there
    spec.loader.exec_module(old)
    times: dict[str, list[float]] = {"baseline": [], "this tree": []}
    for _ in range(repeat):
        times["baseline"].append(_read_path(old, path))
        times["this tree"].append(_read_path(sources, path))
    floor = statistics.median(times["baseline"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"read path, {name:9}: {median:6.3f} CPU s  {median / floor:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tk-inputs")
    parser.add_argument("--read-ab", type=Path, help="time the read path on this file")
    parser.add_argument("--baseline", type=Path, help="a checkout of the previous code")
    args = parser.parse_args()
    if args.read_ab:
        _read_ab(args.read_ab, args.baseline, args.repeat)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    inputs = _write_inputs(args.dir)
    print(
        f"{'command':8} {'input':10} {'input MB':>9} {'wall s':>8} {'x small':>8} {'peak MiB':>9}"
    )
    for command in ("ingest", "tree"):
        floor = None
        for name, path in inputs.items():
            seconds, peak = _measure(command, path, args.dir, args.repeat)
            floor = floor or seconds
            size = path.stat().st_size / 1e6
            print(
                f"{command:8} {name:10} {size:9.1f} {seconds:8.2f} {seconds / floor:8.2f}"
                f" {peak:9.0f}"
            )


if __name__ == "__main__":
    main()
