"""Where one ``tracekit find`` or ``tracekit fleet --format json`` process spends its CPU, step by step.

One process does what the command does, timing each step with
``time.process_time()`` (every DuckDB thread included): importing duckdb (the
bare SQL process pays it too), importing tracekit's modules, opening the store,
the query (``Store.find`` or ``fleet_report``), printing; then, for find, a bare
connection and the hand-written statement of the same answer (bench_find.py's)
for comparison. Run it a few times: the figures move with the machine's load.

Run::

    .venv/bin/python bench/bench_find_steps.py STORE 'billing > refunds'
    .venv/bin/python bench/bench_find_steps.py STORE --fleet
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def find_steps(db: str, query: str) -> str:
    """The find command's steps, and the bare connection and hand statement beside them."""
    t0 = time.process_time()
    import duckdb

    t1 = time.process_time()
    from tracekit.cli.find import find_frame, find_notes
    from tracekit.cli.remote import open_reader
    from tracekit.cli.tables import render

    t2 = time.process_time()
    with open_reader(db, None, 0) as store:
        t3 = time.process_time()
        found = store.find(query, limit=50)
        t4 = time.process_time()
    render(find_frame(found, "table", runs=False), "table", width=120)
    find_notes(found, runs=False)
    t5 = time.process_time()
    con = duckdb.connect(db, read_only=True)
    t6 = time.process_time()
    from bench_find import QUERIES

    hand = {q: sql for q, sql, _ in QUERIES}[query]
    t7 = time.process_time()
    con.sql(hand).fetchall()
    t8 = time.process_time()
    return (
        f"import duckdb {t1 - t0:.3f}  tracekit {t2 - t1:.3f}  open {t3 - t2:.3f}"
        f"  find {t4 - t3:.3f}  print {t5 - t4:.3f}  |  bare connect {t6 - t5:.3f}"
        f"  hand SQL {t8 - t7:.3f}"
    )


def fleet_steps(db: str) -> str:
    """The fleet command's steps (JSON)."""
    t0 = time.process_time()
    import duckdb  # noqa: F401  (timed: the bare process imports it too)

    t1 = time.process_time()
    from tracekit.cli.fleet import fleet_json
    from tracekit.fleet import fleet_report, open_for_report

    t2 = time.process_time()
    with open_for_report(db, wait=0) as store:
        t3 = time.process_time()
        report = fleet_report(store)
        t4 = time.process_time()
    io.StringIO().write(fleet_json(report))
    t5 = time.process_time()
    return (
        f"import duckdb {t1 - t0:.3f}  tracekit {t2 - t1:.3f}  open {t3 - t2:.3f}"
        f"  report {t4 - t3:.3f}  JSON {t5 - t4:.3f}"
    )


if __name__ == "__main__":
    store_path, what = sys.argv[1], sys.argv[2]
    print(fleet_steps(store_path) if what == "--fleet" else find_steps(store_path, what))
