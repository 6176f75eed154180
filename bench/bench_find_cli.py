"""``tracekit find`` and ``tracekit fleet --format json`` as commands, against bare SQL processes.

Each side is a fresh process (what a user waits for): the command through the
installed script, and ``python -c 'import duckdb; ...'`` running the
hand-written statement (bench_find.py's) or a bare ``GROUP BY outcome``.
CPU is the child's user + system time (every DuckDB thread included); medians
of ``--repeat``, sides alternating. ``--baseline DIR`` adds that checkout's
command (PYTHONPATH=DIR) beside this one. ``--db STORE`` times an existing
store (e.g. the 200,000-run one bench_find.py builds) instead of building one.

The cases: ``a > b`` and ``a >> b[status=error]`` as a table, JSON and CSV,
``--runs`` as a table and JSON (each against the hand-written statement of
the same answer, every row fetched), and ``tracekit fleet --format json`` and
the tables against ``SELECT outcome, count(*) FROM runs GROUP BY outcome``.

Run::

    .venv/bin/python bench/bench_find_cli.py --runs 3000 --repeat 7 --baseline ../main-baseline
    .venv/bin/python bench/bench_find_cli.py --db bench/out/find-200000.duckdb --baseline ../main-baseline
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))

from bench_find import QUERIES  # noqa: E402

TRACEKIT = Path(sys.executable).with_name("tracekit")
BARE = "import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True); print(len(c.sql(sys.argv[2]).fetchall()))"
GROUP_BY = "SELECT outcome, count(*) FROM runs GROUP BY outcome"


# As installed: pip writes each module's bytecode at install time. With
# PYTHONDONTWRITEBYTECODE set (as in some sandboxes), every tracekit module is
# compiled from source on every command (0.03-0.1 s); --no-bytecode measures that.
_ENV = dict(os.environ)


def cpu_of(argv: list[str], path: Path) -> float:
    """The child's CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**_ENV, "PYTHONPATH": str(path)}
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def store(runs: int) -> Path:
    out = HERE / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    fleet, db = out / f"findcli-{runs}.jsonl", out / f"findcli-{runs}.duckdb"
    if not db.exists():
        subprocess.run(
            [str(TRACEKIT), "simulate", "-o", str(fleet), "--runs", str(runs), "--seed", "11"],
            check=True,
        )
        subprocess.run([str(TRACEKIT), "ingest", str(fleet), "--db", str(db)], check=True)
    return db


def duckdb_count(db: Path) -> int:
    """How many runs the store holds (asked in a child: this process stays free of duckdb)."""
    code = "import duckdb,sys; print(duckdb.connect(sys.argv[1], read_only=True).sql('SELECT count(*) FROM runs').fetchall()[0][0])"
    out = subprocess.run([sys.executable, "-c", code, str(db)], check=True, capture_output=True)
    return int(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--db", type=Path, help="an existing store (default: build --runs)")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="compile every module on every start"
    )
    args = parser.parse_args()
    if not args.no_bytecode:
        _ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    db = args.db or store(args.runs)
    cases = []
    for q, sql, _ in QUERIES[:2]:
        for fmt in ("table", "json", "csv"):
            cases.append((f"{q} ({fmt})", ["find", q, "--format", fmt], sql))
    for fmt in ("table", "json"):
        cases.append(
            (
                f"{QUERIES[0][0]} --runs ({fmt})",
                ["find", QUERIES[0][0], "--runs", "--format", fmt],
                QUERIES[0][1],
            )
        )
    cases.append(("fleet --format json", ["fleet", "--format", "json"], GROUP_BY))
    cases.append(("fleet (tables)", ["fleet"], GROUP_BY))
    sides = {"this": HERE} | ({"main": args.baseline} if args.baseline else {})
    runs = duckdb_count(db)
    print(f"{runs:,} runs ({db.name}), median CPU s of {args.repeat} fresh processes")
    for path in sides.values():  # bytecode written (unless --no-bytecode), files cached
        cpu_of([str(TRACEKIT), *cases[0][1], "--db", str(db)], path)
        cpu_of([str(TRACEKIT), "fleet", "--db", str(db)], path)
    bytecode = "compiled on every start" if args.no_bytecode else "bytecode cached, as installed"
    print(f"  ({bytecode})")
    print(f"  {'command':44} {'bare SQL':>9} " + " ".join(f"{s:>9} {s + '/SQL':>9}" for s in sides))
    for name, command, sql in cases:
        times: dict[str, list[float]] = {"sql": [], **{s: [] for s in sides}}
        for _ in range(args.repeat):
            times["sql"].append(cpu_of([sys.executable, "-c", BARE, str(db), sql], HERE))
            for side, path in sides.items():
                times[side].append(cpu_of([str(TRACEKIT), *command, "--db", str(db)], path))
        med = {k: statistics.median(v) for k, v in times.items()}
        cols = " ".join(f"{med[s]:9.3f} {med[s] / med['sql']:8.2f}x" for s in sides)
        print(f"  {name:44} {med['sql']:9.3f} {cols}", flush=True)


if __name__ == "__main__":
    main()
