"""OTLP JSON file ingest (spans stored, then derived), rederive, a baseline checkout, and DuckDB's read_json.

Usage:
    .venv/bin/python bench/bench_otlp_ingest.py [--baseline ../main-baseline] [--runs 10000] [--repeat 3]

Writes a simulated OTLP fleet once (``tracekit simulate --format otlp``, seed
0, a fixed start), then, in child processes taking turns so that a loaded
machine shifts every side alike:

- ``ingest``: this tree's ``ingest_paths``: the spans stored, every trace derived, classified;
- ``rederive``: this tree's ``rederive`` of the store that ingest made (every trace again);
- ``baseline``: the baseline checkout's ``ingest_paths`` (``PYTHONPATH``), if given;
- ``read_json``: DuckDB's ``CREATE TABLE AS SELECT * FROM read_json(file)``.

Each figure is the median of CPU seconds (``time.process_time`` in the child,
every thread: reading, mapping, loading, derive and classify; no imports)
and spans per CPU second; ratios are against ``read_json`` of the same run.
OTLP protobuf is not a file format ``tracekit ingest`` reads (a collector's
bodies are), so only JSON is timed here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CHILD = """
import sys, time
from pathlib import Path
import duckdb
path, what, db = sys.argv[1:4]
if what == "read_json":
    con = duckdb.connect(db)
    started = time.process_time()
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, maximum_object_size=1000000000)", [path])
else:
    from tracekit.store.db import connect
    from tracekit.store.ingest import ingest_paths
    con = connect(Path(db))
    if what == "rederive":
        from tracekit.store.rederive import rederive
        ingest_paths(con, [path])
        started = time.process_time()
        rederive(con)
    else:
        started = time.process_time()
        ingest_paths(con, [path])
print(time.process_time() - started)
"""
SIDES = ("ingest", "rederive", "baseline", "read_json")


def _child(side: str, path: Path, tmp: Path, baseline: Path | None) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(baseline if side == "baseline" and baseline else HERE)
    db = tmp / f"{side}.duckdb"
    db.unlink(missing_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), side, str(db)],
        env=env,
        cwd=tmp,  # ``-c`` puts the current directory first: it must shadow no checkout
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout of the baseline")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        path = tmp / "fleet.otlp.jsonl"
        made = subprocess.run(
            [
                str(Path(sys.executable).with_name("tracekit")),
                "simulate",
                "--format",
                "otlp",
                "--seed",
                "0",
                "--runs",
                str(args.runs),
                "--start",
                "2026-01-01T00:00:00Z",
                "-o",
                str(path),
            ],
            env={**os.environ, "PYTHONPATH": str(HERE)},
            check=True,
            capture_output=True,
            text=True,
        )
        spans = int((made.stdout + made.stderr).split(" as ")[1].split()[0].replace(",", ""))
        sides = [s for s in SIDES if s != "baseline" or args.baseline is not None]
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.repeat):
            for side in sides:
                times[side].append(_child(side, path, tmp, args.baseline))
        base = statistics.median(times["read_json"])
        print(f"{spans:,} spans, {path.stat().st_size / 1e6:.0f} MB, medians of {args.repeat}")
        for side in sides:
            cpu = statistics.median(times[side])
            print(
                f"  {side:10} {cpu:6.2f} CPU-s  {spans / cpu:9,.0f} spans/s  {cpu / base:5.2f}x read_json"
            )


if __name__ == "__main__":
    main()
