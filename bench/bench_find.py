"""``tracekit find`` against hand-written SQL on the same store, and the closure's cost at ingest.

Queries: five representative ones, each beside the SQL an analyst would write
for the same answer over the same store (with the ``closure`` table, and, for
the ``>>`` ones, also a recursive CTE over ``invocations`` alone: what one
writes without it). Each side runs ``--repeat`` times, alternating; medians of
wall and CPU time (CPU: the process's user + system, every DuckDB thread
included). Every side's answer is checked to be the same set of paths.

* ``find SQL``: the compiled statement, fetched as Arrow (what the language adds
  to the query itself);
* ``Store.find``: end to end, parse to the two ordered DataFrames (paths with
  their list columns and path texts, runs with their counts);
* ``hand SQL``: the hand-written statement fetched as Arrow.

Ingest (``--baseline DIR``, a checkout of main: ``git archive main | tar -x -C DIR``):
``Store.ingest`` of one fleet into a fresh store, by this checkout and by the
baseline, alternating, each in a fresh process (as bench_ab.py); plus the
closure's own share, timed in process: the backfill (what ``derive_paths`` does
for a fresh ingest) on the whole store.

Run::

    .venv/bin/python bench/bench_find.py --runs 200000
    git archive main | tar -x -C /tmp/tk-main      # (mkdir it first)
    .venv/bin/python bench/bench_find.py --ingest-only --baseline /tmp/tk-main \\
        --ingest-runs 20000 --ingest-repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
OUT = HERE / "bench" / "out"

_ROOT_PARENT = "UNION ALL SELECT r.run_id, r.run_id AS a, b.invocation_id AS b FROM runs r"

# (query, hand-written SQL with the closure, the same without it or None)
QUERIES: list[tuple[str, str, str | None]] = [
    (
        "billing > refunds",
        """SELECT b.root_run_id, a.invocation_id, b.invocation_id
        FROM invocations a JOIN invocations b ON b.parent_run_id = a.run_id
        WHERE a.agent = 'billing' AND b.agent = 'refunds' AND a.root_run_id IS NOT NULL
        """
        + _ROOT_PARENT
        + """ JOIN invocations b ON b.parent_run_id = r.run_id
        WHERE r.agent = 'billing' AND b.agent = 'refunds'""",
        None,
    ),
    (
        "billing >> refunds[status=error]",
        """SELECT b.root_run_id, a.invocation_id, b.invocation_id
        FROM invocations a JOIN closure c ON c.ancestor = a.run_id
        JOIN invocations b ON b.run_id = c.descendant
        WHERE a.agent = 'billing' AND b.agent = 'refunds' AND b.status = 'error'
            AND a.root_run_id IS NOT NULL
        """
        + _ROOT_PARENT
        + """ JOIN closure c ON c.ancestor = r.run_id JOIN invocations b ON b.run_id = c.descendant
        WHERE r.agent = 'billing' AND b.agent = 'refunds' AND b.status = 'error'""",
        """WITH RECURSIVE tops AS (
            SELECT root_run_id AS root, invocation_id AS top, run_id FROM invocations
            WHERE agent = 'billing' AND root_run_id IS NOT NULL
            UNION ALL SELECT run_id, run_id, run_id FROM runs WHERE agent = 'billing'
        ), down(root, top, run_id) AS (
            SELECT t.root, t.top, c.run_id FROM tops t JOIN invocations c ON c.parent_run_id = t.run_id
            UNION ALL
            SELECT d.root, d.top, c.run_id FROM down d JOIN invocations c ON c.parent_run_id = d.run_id
        )
        SELECT d.root, d.top, b.invocation_id FROM down d JOIN invocations b ON b.run_id = d.run_id
        WHERE b.agent = 'refunds' AND b.status = 'error'""",
    ),
    (
        "* ~> billing[status=error]",
        """SELECT b.root_run_id, coalesce(a.invocation_id, b.parent_run_id), b.invocation_id
        FROM invocations b LEFT JOIN invocations a ON a.run_id = b.parent_run_id
        WHERE b.agent = 'billing' AND b.status = 'error' AND b.kind = 'handoff'
            AND b.root_run_id IS NOT NULL""",
        None,
    ),
    (
        "planner >> writer > critic",
        """SELECT b.root_run_id, a.invocation_id, b.invocation_id, x.invocation_id
        FROM invocations a JOIN closure c ON c.ancestor = a.run_id
        JOIN invocations b ON b.run_id = c.descendant
        JOIN invocations x ON x.parent_run_id = b.run_id
        WHERE a.agent = 'planner' AND b.agent = 'writer' AND x.agent = 'critic'
            AND a.root_run_id IS NOT NULL
        UNION ALL SELECT r.run_id, r.run_id, b.invocation_id, x.invocation_id FROM runs r
        JOIN closure c ON c.ancestor = r.run_id JOIN invocations b ON b.run_id = c.descendant
        JOIN invocations x ON x.parent_run_id = b.run_id
        WHERE r.agent = 'planner' AND b.agent = 'writer' AND x.agent = 'critic'""",
        """WITH RECURSIVE tops AS (
            SELECT root_run_id AS root, invocation_id AS top, run_id FROM invocations
            WHERE agent = 'planner' AND root_run_id IS NOT NULL
            UNION ALL SELECT run_id, run_id, run_id FROM runs WHERE agent = 'planner'
        ), down(root, top, run_id) AS (
            SELECT t.root, t.top, c.run_id FROM tops t JOIN invocations c ON c.parent_run_id = t.run_id
            UNION ALL
            SELECT d.root, d.top, c.run_id FROM down d JOIN invocations c ON c.parent_run_id = d.run_id
        )
        SELECT d.root, d.top, b.invocation_id, x.invocation_id
        FROM down d JOIN invocations b ON b.run_id = d.run_id
        JOIN invocations x ON x.parent_run_id = b.run_id
        WHERE b.agent = 'writer' AND x.agent = 'critic'""",
    ),
    (
        "circle(billing)",
        """SELECT i.root_run_id, i.invocation_id FROM runs r
        JOIN invocations i ON i.invocation_id = r.origin_invocation_id AND i.root_run_id = r.run_id
        WHERE r.circle IS NOT NULL AND list_contains(i.chain, 'billing')""",
        None,
    ),
]


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def build_store(runs: int) -> Path:
    """The fleet of ``runs`` runs (simulated once) in a store (ingested once), under bench/out."""
    OUT.mkdir(parents=True, exist_ok=True)
    fleet, db = OUT / f"find-{runs}.jsonl", OUT / f"find-{runs}.duckdb"
    if not fleet.exists():
        from tracekit import simulate

        simulate(fleet, runs=runs, seed=11)
    if not db.exists():
        from tracekit import Store

        with Store(db) as store:
            wall, cpu, _ = timed(lambda: store.ingest(fleet))
        print(f"  built {db.name}: ingest {wall:.1f} s ({cpu:.1f} CPU)")
    return db


def bench_queries(runs: int, repeat: int) -> None:
    from tracekit import Store
    from tracekit.store.findparse import parse_query
    from tracekit.store.findsql import compile_query

    db = build_store(runs)
    with Store(db, read_only=True) as store:
        con = store.con
        sizes = con.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM invocations),"
            " (SELECT count(*) FROM closure)"
        ).fetchall()[0]
        print(
            f"\n{runs:,} runs: {sizes[0]:,} root runs, {sizes[1]:,} invocations,"
            f" {sizes[2]:,} closure rows; medians of {repeat}, load {os.getloadavg()[0]:.1f}"
        )
        print(
            f"  {'query':34s} {'paths':>7s}  {'find SQL':>15s}  {'Store.find':>15s}"
            f"  {'hand SQL':>15s}  {'no closure':>15s}  find/hand (CPU)"
        )
        for query, hand, recursive in QUERIES:
            sql, params = compile_query(parse_query(query))
            sides: dict[str, Callable[[], Any]] = {
                "find SQL": lambda sql=sql, params=params: con.sql(
                    sql, params=params
                ).to_arrow_table(),
                "Store.find": lambda query=query: store.find(query),
                "hand SQL": lambda hand=hand: con.sql(hand).to_arrow_table(),
            }
            if recursive:
                sides["no closure"] = lambda recursive=recursive: con.sql(
                    recursive
                ).to_arrow_table()
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in sides}
            answers: dict[str, set[tuple[Any, ...]]] = {}
            for _ in range(repeat):
                for name, fn in sides.items():
                    wall, cpu, out = timed(fn)
                    times[name].append((wall, cpu))
                    answers[name] = _paths(out)
            assert len({frozenset(a) for a in answers.values()}) == 1, f"{query}: answers differ"
            med = {
                k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                for k, v in times.items()
            }
            cells = "  ".join(
                f"{med[k][0]:6.3f} ({med[k][1]:5.3f})" if k in med else f"{'-':>15s}"
                for k in ("find SQL", "Store.find", "hand SQL", "no closure")
            )
            ratio = med["find SQL"][1] / med["hand SQL"][1]
            whole = med["Store.find"][1] / med["hand SQL"][1]
            print(
                f"  {query:34s} {len(answers['hand SQL']):7,d}  {cells}  {ratio:4.2f}x ({whole:4.2f}x end to end)"
            )


def _paths(out: Any) -> set[tuple[Any, ...]]:
    """Each answer as a set of (run, ids...), whatever its shape."""
    if hasattr(out, "paths"):  # a FindResult
        return {
            (r, *ids) for r, ids in zip(out.paths.run_id, out.paths.invocation_ids, strict=True)
        }
    columns = [column.to_pylist() for column in out.columns]
    if out.column_names[1:] == ["invocation_ids", "agents", "statuses"]:
        return {(r, *ids) for r, ids in zip(columns[0], columns[1], strict=True)}
    return set(zip(*columns, strict=True))


def bench_closure_share(runs: int, repeat: int) -> None:
    """The closure's rebuild on the whole store (what a fresh ingest's derive_paths does)."""
    import shutil

    import duckdb

    from tracekit.store.paths import CLOSURE_BACKFILL

    db = build_store(runs)
    copy = Path(tempfile.mkdtemp()) / "copy.duckdb"
    shutil.copy(db, copy)
    con = duckdb.connect(str(copy))
    samples = []
    for _ in range(repeat):
        con.execute("BEGIN")
        con.execute("DELETE FROM closure")
        wall, cpu, _ = timed(lambda: con.execute(CLOSURE_BACKFILL))
        con.execute("ROLLBACK")
        samples.append((wall, cpu))
    con.close()
    copy.unlink()
    print(
        f"  closure of {runs:,} runs, built from scratch: "
        f"{statistics.median(w for w, _ in samples):.2f} s "
        f"({statistics.median(c for _, c in samples):.2f} CPU), median of {repeat}"
    )


INGEST = "import sys\nfrom tracekit import Store\nwith Store(sys.argv[2]) as s:\n    s.ingest(sys.argv[1])\n"


def bench_ingest(baseline: Path, runs: int, repeat: int) -> None:
    """Store.ingest of one fleet, this checkout against the baseline, alternating."""
    fleet = OUT / f"find-{runs}.jsonl"
    if not fleet.exists():
        from tracekit import simulate

        simulate(fleet, runs=runs, seed=11)
    times: dict[str, list[tuple[float, float]]] = {"main": [], "find": []}
    for _ in range(repeat):
        for side, code in (("main", baseline), ("find", HERE)):
            store = Path(tempfile.mkdtemp()) / "s.duckdb"
            env = {**os.environ, "PYTHONPATH": str(code)}
            argv = [sys.executable, "-c", INGEST, str(fleet), str(store)]
            wall = time.perf_counter()
            proc = subprocess.Popen(argv, env=env, cwd="/tmp")
            _, status, usage = os.wait4(proc.pid, 0)
            if status != 0:
                raise SystemExit(f"ingest failed on {side}")
            times[side].append((time.perf_counter() - wall, usage.ru_utime + usage.ru_stime))
            store.unlink()
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in times.items()
    }
    print(
        f"\ningest of {runs:,} runs into a fresh store, medians of {repeat},"
        f" load {os.getloadavg()[0]:.1f}"
    )
    for side in ("main", "find"):
        print(f"  {side:5s} {med[side][0]:7.2f} s ({med[side][1]:7.2f} CPU)")
    print(
        f"  find / main: wall {med['find'][0] / med['main'][0]:.3f}x,"
        f" CPU {med['find'][1] / med['main'][1]:.3f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[200_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout of main, for the ingest A/B")
    parser.add_argument("--ingest-runs", type=int, default=50_000)
    parser.add_argument("--ingest-repeat", type=int, default=3)
    parser.add_argument("--ingest-only", action="store_true", help="skip the queries")
    args = parser.parse_args()
    for runs in [] if args.ingest_only else args.runs:
        bench_queries(runs, args.repeat)
        bench_closure_share(runs, args.repeat)
    if args.baseline:
        bench_ingest(args.baseline, args.ingest_runs, args.ingest_repeat)


if __name__ == "__main__":
    main()
