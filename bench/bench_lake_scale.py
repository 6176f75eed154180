"""The fleet report over big lakes (10 M, 50 M, 100 M records): DuckDB and local Spark.

The lakes are built by ``bench/lake_replicate.py`` (copies of one exported day,
each a writer, ending on the same day). For each lake, in one run:

- ``tracekit fleet --lake DIR --format json`` (DuckDB, the default 1 GB memory),
  exact and ``--percentiles approx`` percentiles, and ``--since 24h``, each in a
  fresh process: wall, CPU (user + system) and peak RSS from ``os.wait4``;
- the files the one-day window opens (``Total Files Read`` of ``EXPLAIN ANALYZE``
  on ``runs`` and ``fleet_calls``, with the report's own filter) against all;
- with ``--spark``, the same full report on one local Spark Connect server.

Run::

    python bench/bench_lake_scale.py bench/out/lake100-last10 bench/out/lake100-last50 \\
        bench/out/lake100 --repeat 3 --spark --spark-memory 4g
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

TRACEKIT = str(Path(sys.executable).parent / "tracekit")


def child(argv: list[str]) -> tuple[float, float, int, int]:
    """Wall s, CPU s, peak RSS MB and bytes written to stdout of a fresh process."""
    start = time.perf_counter()
    with (
        open(os.devnull, "wb") as sink,
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc,
    ):
        assert proc.stdout is not None
        size = 0
        for chunk in iter(lambda: proc.stdout.read(1 << 16), b""):  # type: ignore[union-attr]
            size += len(chunk)
            sink.write(chunk)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode() if proc.stderr else ""
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, size


def records(lake: Path) -> dict[str, int]:
    rows: dict[str, int] = {}
    for manifest in (lake / "_writers").glob("*.json"):
        for table, entry in json.loads(manifest.read_text())["tables"].items():
            rows[table] = rows.get(table, 0) + sum(p["rows"] for p in entry["partitions"].values())
    return rows


def files_read(lake: Path, since: datetime, now: datetime) -> str:
    from tracekit.fleet import FleetFilter
    from tracekit.lake.engine import duckdb_lake

    flt = FleetFilter(since, now, partitioned=True)
    con = duckdb_lake(lake)
    out = []
    for table, (where, params) in (
        ("runs", flt.runs_where()),
        ("fleet_calls", flt.calls_where("fleet_calls")),
    ):
        plan = con.execute(f"EXPLAIN ANALYZE SELECT count(*) FROM {table} WHERE {where}", params)
        text = "".join(str(r[1]) for r in plan.fetchall())
        read = sum(int(n) for n in re.findall(r"Total Files Read: (\d+)", text))
        every = len(list((lake / table).glob("*/*/*.parquet")))
        out.append(f"{table} {read} of {every} files")
    con.close()
    return ", ".join(out)


def line(label: str, runs: list[tuple[float, float, int, int]]) -> str:
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    rss = max(r[2] for r in runs)
    size = runs[0][3] / 1e6
    return (
        f"  {label:<34}{wall:8.2f} s  cpu {cpu:7.2f} s  peak RSS {rss:6d} MB  json {size:7.2f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lakes", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true")
    parser.add_argument("--spark-memory", default="4g")
    parser.add_argument("--spark-only", action="store_true", help="skip the DuckDB sides")
    args = parser.parse_args()
    now = datetime.utcnow()
    sides = {
        "DuckDB, exact percentiles": [],
        "DuckDB, --percentiles approx": ["--percentiles", "approx"],
        "DuckDB, --since 24h": ["--since", "24h"],
    }
    spark = None
    if args.spark:
        from tracekit.lake.local import LocalSpark

        spark = LocalSpark(memory=args.spark_memory, cores=2, shuffle_partitions=4).start()
    try:
        for lake in args.lakes:
            rows = records(lake)
            load = os.getloadavg()[0]
            print(
                f"{lake.name}: {rows.get('events', 0):,} records, {rows.get('runs', 0):,} runs,"
                f" {rows.get('fleet_calls', 0):,} calls; load average {load:.1f}",
                flush=True,
            )
            for label, extra in sides.items() if not args.spark_only else []:
                argv = [TRACEKIT, "fleet", "--lake", str(lake), "--format", "json", *extra]
                print(line(label, [child(argv) for _ in range(args.repeat)]), flush=True)
            print(f"  24h window opens: {files_read(lake, now - timedelta(hours=24), now)}")
            if spark is not None:
                argv = [TRACEKIT, "fleet", "--lake", str(lake), "--format", "json"]
                argv += ["--engine", "spark", "--remote", spark.remote]
                print(line("Spark (local[2]), exact", [child(argv)]), flush=True)
                print(line("Spark, --since 24h", [child([*argv, "--since", "24h"])]), flush=True)
    finally:
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
