"""Benchmark: a ``/metrics`` scrape of ``tracekit serve`` vs a bare GROUP BY of the runs.

The store is a simulated fleet (seed 11) with a loop row for every run with a
circle and for one run in twenty more (``finished``, with tokens), built once
into ``bench/out/metrics-<runs>.duckdb``. In the same run, alternating, the
script times:

* the baseline: ``SELECT service, outcome, count(*) FROM runs GROUP BY ALL``
  on an open connection;
* :func:`tracekit.store.gauges.store_gauges` (the three reads a scrape makes
  when the store changed);
* over HTTP on a live ``tracekit serve`` of that store: a scrape that reads
  the store (the first after a change) and one that does not (nothing stored
  since: what a scrape every 15 s of an idle store costs), against ``GET
  /healthz`` (no store read at all) alternating with it.

Run: ``.venv/bin/python bench/bench_metrics.py`` (``--runs N``, ``--repeat K``).
A reading is three small queries whose planning (CTE, window, join) outweighs
their scans at this size; it runs once per stored batch at most every 5 s.
Aim: a reading under 50 ms at 20,000 runs; a scrape with nothing new within a
few ms of ``GET /healthz`` (it renders about 100 lines, no store read).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

OUT = Path(__file__).parent / "out"
BARE = "SELECT service, outcome, count(*) FROM runs GROUP BY ALL"
LOOPS = """
INSERT INTO loops
SELECT run_id, coalesce(circle, 'billing -> refunds -> billing'), 3,
    CASE WHEN circle IS NULL THEN 'finished' ELSE 'refused' END, NULL, agent,
    7, 5, 1000 + hash(run_id) % 1000, 100, 900.0
FROM runs WHERE circle IS NOT NULL OR hash(run_id) % 20 = 0
"""


def build_store(runs: int) -> Path:
    from tracekit.simulation.simulator import simulate
    from tracekit.store import Store

    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / f"metrics-{runs}.duckdb"
    if db.exists():
        return db
    trace = OUT / f"metrics-{runs}.jsonl"
    simulate(trace, runs=runs, seed=11)
    with Store(db) as store:
        store.ingest(trace)
        store.con.execute(LOOPS)
    trace.unlink()
    return db


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url) as reply:
        body: bytes = reply.read()
        return body


def main() -> None:
    import duckdb
    from _server_helpers import start

    from tracekit.store.gauges import store_gauges

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    db = build_store(args.runs)
    con = duckdb.connect(str(db), read_only=True)
    bare, reading = [], []
    for _ in range(args.repeat):
        bare.append(timed(lambda: con.execute(BARE).fetchall()))
        reading.append(timed(lambda: store_gauges(con)))
    loops = con.execute("SELECT count(*) FROM loops").fetchone()
    con.close()
    server = start(db)
    try:
        first = timed(lambda: _get(server.url + "/metrics"))  # reads the store
        cached, health = [], []
        for _ in range(args.repeat * 4):  # alternating: the same load on both
            cached.append(timed(lambda: _get(server.url + "/metrics")))
            health.append(timed(lambda: _get(server.url + "/healthz")))
    finally:
        server.stop()
    b, r, c = statistics.median(bare), statistics.median(reading), statistics.median(cached)
    h = statistics.median(health)
    print(f"{args.runs:,} runs, {loops[0] if loops else 0:,} loop rows")
    print(f"bare GROUP BY         {b * 1000:8.1f} ms")
    print(f"store_gauges (3 reads) {r * 1000:7.1f} ms  {r / b:.1f}x the bare GROUP BY")
    print(f"scrape, store read    {first * 1000:8.1f} ms  (HTTP, first after start)")
    print(f"GET /healthz          {h * 1000:8.1f} ms  (HTTP, median of {len(health)})")
    print(f"scrape, nothing new   {c * 1000:8.1f} ms  {c / h:.1f}x GET /healthz (no store read)")


if __name__ == "__main__":
    main()
