"""Lake: `tracekit export` against DuckDB's bare `COPY ... TO parquet`, and the fleet
report over lakes of growing size on DuckDB and on a local Spark Connect server.

Each size N is a store of a simulated fleet of about N records (`tracekit simulate
--events N --seed 7`, ingested once and kept in --dir). For each size, in one run:

- bare: each of the five tables copied by DuckDB itself (`COPY t TO 'x.parquet'
  (FORMAT parquet, COMPRESSION zstd)`), one file a table, no partitions;
- export: `export_lake(store, new lake)` (fingerprints, partitioned COPY, the moves,
  the manifest); then `export_lake` again on the unchanged store (nothing to write);
- the fleet report over the lake on DuckDB (`fleet_report(lake=...)`), and on Spark
  (`--spark`: one local server for the run; `engine="spark"`).

Each DuckDB side runs in a fresh child process (wall and CPU time and peak RSS from
`os.wait4`), alternating, medians of --repeat. Spark's peak memory is the server
JVM's high-water mark (VmHWM) plus the client's.

Run::

    .venv/bin/python bench/bench_lake.py --sizes 1000000 10000000 --dir /tmp/bl --spark
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TABLES = ("events", "invocations", "runs", "steps", "fleet_calls")

BARE = f"""
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
con.execute("SET enable_progress_bar = false")
for t in {TABLES!r}:
    con.execute(f"COPY {{t}} TO '{{sys.argv[2]}}/{{t}}.parquet' (FORMAT parquet, COMPRESSION zstd)")
"""
EXPORT = """
import sys
from tracekit.lake import export_lake
export_lake(sys.argv[1], sys.argv[2])
"""
REPORT = """
import sys
from tracekit.fleet import fleet_report
fleet_report(lake=sys.argv[1])
"""


def child(code: str, *args: str) -> tuple[float, float, int]:
    """Wall s, CPU s and peak RSS (MB) of ``code`` in a fresh interpreter."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"child failed ({status}): {code[:60]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def build(size: int, folder: Path) -> Path:
    db = folder / f"lake-fleet-{size}.duckdb"
    if db.exists():
        return db
    trace = folder / f"lake-fleet-{size}.jsonl"
    subprocess.run(
        [BIN / "tracekit", "simulate", "--events", str(size), "--seed", "7",
         "--start", "2026-11-01T00:00:00Z", "--window", "7d", "-o", str(trace)],
        check=True,
    )  # fmt: skip
    subprocess.run([BIN / "tracekit", "ingest", str(trace), "--db", str(db)], check=True)
    trace.unlink()
    return db


def records(db: Path) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
    finally:
        con.close()


def median(runs: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        max(r[2] for r in runs),
    )


def line(label: str, wall: float, cpu: float, rss: int, extra: str = "") -> str:
    return f"  {label:<38}{wall:8.2f} s  cpu {cpu:7.2f} s  peak RSS {rss:6d} MB  {extra}"


def jvm_peak_mb(server: object) -> int:
    """The server JVM's high-water RSS (the java child of spark-submit's process group)."""
    pgid = server.process.pid  # type: ignore[attr-defined]
    peak = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            for row in Path(f"/proc/{pid}/status").read_text().splitlines():
                if row.startswith("VmHWM:"):
                    peak = max(peak, int(row.split()[1]) // 1024)
        except (OSError, ProcessLookupError):
            continue
    return peak


def spark_report(lake: Path, remote: str, repeat: int) -> list[float]:
    from tracekit.fleet import fleet_report

    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        fleet_report(lake=lake, engine="spark", remote=remote)
        walls.append(time.perf_counter() - start)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-lake"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true", help="also on a local Spark server")
    parser.add_argument("--spark-memory", default="4g")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    server = None
    if args.spark:
        from tracekit.lake.local import LocalSpark

        server = LocalSpark(memory=args.spark_memory, cores=os.cpu_count() or 2).start()
    try:
        for size in args.sizes:
            db = build(size, args.dir)
            n = records(db)
            bare, export, again, report = [], [], [], []
            lake = args.dir / f"lake-{size}"
            for _ in range(args.repeat):
                out = args.dir / f"bare-{size}"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                bare.append(child(BARE, str(db), str(out)))
                shutil.rmtree(lake, ignore_errors=True)
                export.append(child(EXPORT, str(db), str(lake)))
                again.append(child(EXPORT, str(db), str(lake)))
                report.append(child(REPORT, str(lake)))
            load = os.getloadavg()[0]
            print(f"{n:,} records (events), median of {args.repeat}, load average {load:.1f}")
            b, e = median(bare), median(export)
            print(line("bare COPY of the 5 tables", *b, f"{n / b[0]:>10,.0f} records/s  1.00x"))
            print(
                line(
                    "tracekit export (first)",
                    *e,
                    f"{n / e[0]:>10,.0f} records/s  {e[0] / b[0]:.2f}x",
                )
            )
            print(line("tracekit export (nothing changed)", *median(again)))
            print(line("fleet report, DuckDB over the lake", *median(report)))
            if server is not None:
                walls = spark_report(lake, server.remote, args.repeat)
                print(
                    f"  {'fleet report, local Spark':<38}{statistics.median(walls):8.2f} s"
                    f"  (first {walls[0]:.2f} s)  server peak RSS {jvm_peak_mb(server)} MB"
                )
            sizes = sum(p.stat().st_size for p in lake.rglob("*.parquet")) >> 20
            print(f"  lake: {sizes} MB of Parquet")
            sys.stdout.flush()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
