"""``tracekit find`` and ``tracekit fleet --format json`` as commands, against bare SQL processes.

Each side is a fresh process (what a user waits for): the command through the
installed script, and ``python -c 'import duckdb; ...'`` running the
hand-written statement (bench_find.py's) or a bare ``GROUP BY outcome``.
CPU is the child's user + system time (every DuckDB thread included); medians
of ``--repeat``, sides alternating. ``--baseline DIR`` adds that checkout's
command (PYTHONPATH=DIR) beside this one.

Run::

    .venv/bin/python bench/bench_find_cli.py --runs 3000 --repeat 7 --baseline /work/main
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


def cpu_of(argv: list[str], path: Path) -> float:
    """The child's CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(path)}
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    db = store(args.runs)
    cases = [
        (q, ["find", q, "--format", "json", "--limit", "50"], sql) for q, sql, _ in QUERIES[:2]
    ]
    cases.append(("fleet", ["fleet", "--format", "json"], GROUP_BY))
    sides = {"this": HERE} | ({"main": args.baseline} if args.baseline else {})
    print(f"{args.runs:,} runs, median CPU s of {args.repeat} fresh processes")
    print(f"  {'command':34} {'bare SQL':>9} " + " ".join(f"{s:>9} {s + '/SQL':>9}" for s in sides))
    for name, command, sql in cases:
        times: dict[str, list[float]] = {"sql": [], **{s: [] for s in sides}}
        for _ in range(args.repeat):
            times["sql"].append(cpu_of([sys.executable, "-c", BARE, str(db), sql], HERE))
            for side, path in sides.items():
                times[side].append(cpu_of([str(TRACEKIT), *command, "--db", str(db)], path))
        med = {k: statistics.median(v) for k, v in times.items()}
        cols = " ".join(f"{med[s]:9.3f} {med[s] / med['sql']:8.2f}x" for s in sides)
        print(f"  {name:34} {med['sql']:9.3f} {cols}")


if __name__ == "__main__":
    main()
