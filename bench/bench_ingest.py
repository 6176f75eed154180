"""Ingest a simulated fleet into a store, against DuckDB's raw read_json of the same file.

Usage:
    .venv/bin/python bench/bench_ingest.py [--events 5000000] [--repeat 1] [--dir DIR]

The fleet is written once by ``tracekit simulate --events N --seed 7`` (kept in
DIR for later runs). Then, alternating, each in a fresh child process so that
its peak RSS is its own (``os.wait4``):

* raw: ``CREATE TABLE raw AS SELECT * FROM read_json(FILE, columns={...})`` into
  a new DuckDB file, with the v1 columns given explicitly (no sampling);
* tracekit: ``Store(new file).ingest(FILE)``: parse, check, reject, dedupe,
  store events and derive invocations, steps and runs, all committed.

Figures are medians over ``--repeat``; the ratio is tracekit / raw.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

_COLUMNS = (
    "{'type': 'VARCHAR', 'ts': 'DOUBLE', 'seq': 'BIGINT', 'service': 'VARCHAR',"
    " 'traceId': 'VARCHAR', 'runId': 'VARCHAR', 'parentRunId': 'VARCHAR',"
    " 'invocationId': 'VARCHAR', 'agent': 'VARCHAR', 'node': 'VARCHAR', 'kind': 'VARCHAR',"
    " 'id': 'VARCHAR', 'ok': 'BOOLEAN', 'durationMs': 'DOUBLE', 'status': 'VARCHAR',"
    " 'failure': 'VARCHAR', 'error': 'JSON', 'attrs': 'JSON'}"
)

_RAW = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[2])
con.execute("SET enable_progress_bar = false")
start = time.perf_counter()
con.execute(f"CREATE TABLE raw AS SELECT * FROM read_json('{sys.argv[1]}',"
            f" format='newline_delimited', columns={sys.argv[3]})")
con.close()
n = duckdb.connect(sys.argv[2]).execute("SELECT count(*) FROM raw").fetchone()[0]
print(time.perf_counter() - start, n)
"""

_TRACEKIT = """
import sys, time
from tracekit import Store
start = time.perf_counter()
with Store(sys.argv[2]) as store:
    report = store.ingest(sys.argv[1])
print(time.perf_counter() - start, report.totals.accepted)
print(report.reconciliation(), file=sys.stderr)
"""


def fleet(events: int, folder: Path) -> Path:
    path = folder / f"fleet-{events}.jsonl"
    if not path.exists():
        print(f"writing {events:,} events to {path} ...", flush=True)
        subprocess.run(
            [
                str(BIN / "tracekit"),
                "simulate",
                "--events",
                str(events),
                "--seed",
                "7",
                "--out",
                str(path),
            ],
            check=True,
        )
    return path


def child(code: str, *args: str) -> tuple[float, int, float, str]:
    """Run ``code`` in a fresh interpreter; return seconds, rows, peak RSS (MB), stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"child failed: {err}")
    seconds, rows = out.strip().splitlines()[-1].split()
    return float(seconds), int(rows), usage.ru_maxrss / 1024, err.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tracekit-bench")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    path = fleet(args.events, args.dir)
    size_mb = path.stat().st_size / 2**20
    raw_s, ours_s, raw_rss, ours_rss = [], [], [], []
    line = ""
    for _ in range(args.repeat):
        work = Path(tempfile.mkdtemp(dir=args.dir))
        try:
            s, n_raw, rss, _ = child(_RAW, str(path), str(work / "raw.duckdb"), _COLUMNS)
            raw_s.append(s)
            raw_rss.append(rss)
            s, n_ours, rss, line = child(_TRACEKIT, str(path), str(work / "store.duckdb"))
            ours_s.append(s)
            ours_rss.append(rss)
        finally:
            shutil.rmtree(work)
    raw, ours = statistics.median(raw_s), statistics.median(ours_s)
    load = os.getloadavg()[0]
    print(f"{n_raw:,} events, {size_mb:,.0f} MB, median of {args.repeat}, load average {load:.1f}")
    print(
        f"  raw read_json into a bare table  {raw:7.2f} s  {n_raw / raw:>10,.0f} events/s"
        f"  peak RSS {max(raw_rss):6.0f} MB   1.00x"
    )
    print(
        f"  tracekit ingest (all tables)     {ours:7.2f} s  {n_ours / ours:>10,.0f} events/s"
        f"  peak RSS {max(ours_rss):6.0f} MB  {ours / raw:5.2f}x"
    )
    print(f"  {line}")
    print(
        json.dumps(
            {
                "events": n_ours,
                "raw_s": raw_s,
                "tracekit_s": ours_s,
                "raw_rss_mb": raw_rss,
                "tracekit_rss_mb": ours_rss,
            }
        )
    )


if __name__ == "__main__":
    main()
