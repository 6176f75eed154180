"""Benchmark: `tracekit fleet` and `tracekit dashboard` over 200,000 runs vs a bare GROUP BY.

The store is a simulated fleet (``tracekit.simulation.simulator``, seed 11) ingested once
into ``bench/out/fleet-<runs>.duckdb`` and reused by later runs of the script.
In the same run, alternating, the script times:

* the baseline: a bare ``SELECT agent, count(*), avg(duration_ms) FROM
  invocations GROUP BY agent`` over the same store, in-process (an open
  connection) and as a fresh Python process that opens the store and runs it;
* ``fleet_report(store)`` in-process (every section, both windows), and
  ``tracekit fleet --format json`` and ``tracekit fleet`` (the tables) as commands;
* ``tracekit dashboard`` as a command (the whole HTML page written);
* once, ``classify_store`` over every run (what ``tracekit ingest`` adds).

Run: ``.venv/bin/python bench/bench_fleet.py`` (``--runs N``, ``--repeat K``).
Aim: the fleet report under 3x the bare scan; the dashboard under 10 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
OUT = Path(__file__).parent / "out"
SCAN = "SELECT agent, count(*), avg(duration_ms) FROM invocations GROUP BY agent"
BARE_PROCESS = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1], read_only=True)\n"
    f"con.execute({SCAN!r}).fetchall()\n"
)


def build_store(runs: int) -> Path:
    """Simulate and ingest the fleet once; later runs reuse the store."""
    from tracekit.simulation.simulator import simulate
    from tracekit.store import Store

    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / f"fleet-{runs}.duckdb"
    if db.exists():
        return db
    trace = OUT / f"fleet-{runs}.jsonl"
    started = time.perf_counter()
    simulate(trace, runs=runs, seed=11)
    print(f"simulated {runs:,} runs in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    with Store(db) as store:
        store.ingest(trace)
    print(f"ingested (and classified) in {time.perf_counter() - started:.1f} s", flush=True)
    trace.unlink()
    return db


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def command(*args: str) -> Callable[[], object]:
    def run() -> object:
        return subprocess.run(args, check=True, capture_output=True)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from tracekit.fleet import fleet_report
    from tracekit.store import Store
    from tracekit.store.classify import classify_store

    db = build_store(args.runs)
    with Store(db) as store:
        store.con.execute("UPDATE runs SET classified_at = NULL")
        classify = timed(lambda: classify_store(store))
        counts = store.con.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM invocations)"
        ).fetchone()
    assert counts is not None
    print(f"store: {counts[0]:,} runs, {counts[1]:,} invocations ({db})")

    page = OUT / "fleet-health.html"
    cases: dict[str, Callable[[], object]] = {}
    # One connection for both: DuckDB refuses a second one to the same file
    # with other settings in the same process (the store's are locked).
    store = Store(db, read_only=True)
    con = store.con
    cases["bare GROUP BY scan, in-process"] = lambda: con.execute(SCAN).fetchall()
    cases["fleet_report(store), in-process"] = lambda: fleet_report(store)
    cases["bare GROUP BY scan, new process"] = command(sys.executable, "-c", BARE_PROCESS, str(db))
    cases["tracekit fleet --format json"] = command(
        str(BIN / "tracekit"), "fleet", "--db", str(db), "--format", "json"
    )
    cases["tracekit fleet (tables)"] = command(
        str(BIN / "tracekit"), "fleet", "--db", str(db), "--color", "never"
    )
    cases["tracekit dashboard"] = command(
        str(BIN / "tracekit"), "dashboard", "--db", str(db), "--out", str(page)
    )
    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm the file cache and the imports
        fn()
    for _ in range(args.repeat):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    store.close()

    med = {name: statistics.median(ts) for name, ts in times.items()}
    base_in, base_out = (
        med["bare GROUP BY scan, in-process"],
        med["bare GROUP BY scan, new process"],
    )
    print(f"\n{args.repeat} repetitions, median wall time")
    for name, seconds in med.items():
        base = base_in if "in-process" in name else base_out
        ratio = f"{seconds / base:6.2f}x" if "dashboard" not in name else "       "
        print(f"  {name:36s} {seconds * 1000:9.1f} ms  {ratio}")
    print(f"  {'classify_store, every run (once)':36s} {classify * 1000:9.1f} ms")
    print(f"\ndashboard: {page.stat().st_size / 1e6:.1f} MB, aim under 10 s")


if __name__ == "__main__":
    main()
