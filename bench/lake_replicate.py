"""A big lake for the benchmark: copies of one exported lake, each a writer, each a day later.

Copy k of the base lake (``tracekit export`` of a store whose runs fall on one
day) gets distinct ids (every id column suffixed ``.rK``) and its times moved
so that its day is ``--last-day`` minus ``copies - 1 - k`` days: the copies
end on the same day whatever their number, so a one-day window asks for the
same data on every lake. Each copy is written as its own writer (``repK``,
with its manifest), as a collector's export would be. Replicating is for the
benchmark only: the tests build their lakes from real exports.

``events`` (the raw records, 70% of the bytes, which no report query reads) is
hard-linked, not rewritten: its copies keep the base's ids and times, while
every table a report reads (``runs``, ``invocations``, ``fleet_calls``,
``steps``) is rewritten. Then ``--subset N`` lakes hold the last N copies as
hard links (no copy).

Run::

    python bench/lake_replicate.py --base bench/out/baselake --out bench/out/lake100 \\
        --copies 100 --last-day 2026-12-01 --subset 10 --subset 50
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import date, timedelta
from pathlib import Path

import duckdb

IDS = {
    "events": ("event_key", "run_id", "parent_run_id", "invocation_id", "trace_id"),
    "invocations": (
        "invocation_id",
        "run_id",
        "parent_run_id",
        "root_run_id",
        "parent_invocation_id",
        "trace_id",
    ),
    "runs": ("run_id", "trace_id", "origin_invocation_id", "session_id"),
    "steps": ("run_id", "step_id", "call"),
    "fleet_calls": ("root_run_id", "invocation_id"),
}
MS = ("ts_ms", "start_ms", "end_ms")
AT = ("start_at", "end_at", "classified_at")


def _replace(columns: list[str], table: str, k: int, days: int) -> str:
    parts = []
    for name in columns:
        if name in IDS[table]:
            parts.append(f"{name} || '.r{k}' AS {name}")
        elif name in MS:
            parts.append(f"{name} + {days * 86_400_000}.0 AS {name}")
        elif name in AT:
            parts.append(f"{name} + INTERVAL ({days}) DAY AS {name}")
    return f"* REPLACE ({', '.join(parts)})" if parts else "*"


def copy(con: duckdb.DuckDBPyConnection, base: Path, out: Path, k: int, day: date) -> None:
    """Write copy k (writer ``repK``) of every base partition, on ``day``."""
    manifest = json.loads(next((base / "_writers").glob("*.json")).read_text())
    writer = f"rep{k}"
    tables: dict[str, dict[str, object]] = {}
    for table, entry in manifest["tables"].items():
        parts: dict[str, object] = {}
        for key, part in entry["partitions"].items():
            shift = (day - date.fromisoformat(part["day"])).days
            src = base / key / f"{manifest['writer']}.parquet"
            folder = key.replace(f"day={part['day']}", f"day={day.isoformat()}")
            (out / folder).mkdir(parents=True, exist_ok=True)
            parts[folder] = {**part, "day": day.isoformat()}
            if table == "events":
                os.link(src, out / folder / f"{writer}.parquet")
                continue
            cols = [c for c, _ in entry["columns"] if c not in ("day", "service")]
            con.execute(
                f"COPY (SELECT {_replace(cols, table, k, shift)} FROM read_parquet('{src}'))"
                f" TO '{out / folder / writer}.parquet' (FORMAT parquet, COMPRESSION zstd)"
            )
        tables[table] = {"columns": entry["columns"], "partitions": parts}
    mine = {"format": 2, "writer": writer, "tables": tables}
    (out / "_writers" / f"{writer}.json").write_text(json.dumps(mine, indent=1))


def subset(full: Path, target: Path, writers: list[str]) -> None:
    """A lake of some writers of ``full``, as hard links."""
    (target / "_writers").mkdir(parents=True, exist_ok=True)
    os.link(full / "_tracekit_lake.json", target / "_tracekit_lake.json")
    for writer in writers:
        os.link(full / "_writers" / f"{writer}.json", target / "_writers" / f"{writer}.json")
        for file in full.glob(f"*/*/*/{writer}.parquet"):
            dest = target / file.relative_to(full)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.link(file, dest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--last-day", default="2026-12-01")
    parser.add_argument("--subset", type=int, action="append", default=[])
    args = parser.parse_args()
    last = date.fromisoformat(args.last_day)
    (args.out / "_writers").mkdir(parents=True, exist_ok=True)
    (args.out / "_tracekit_lake.json").write_text(json.dumps({"format": 2}))
    con = duckdb.connect(config={"memory_limit": "1GB", "threads": 2})
    for k in range(args.copies):
        if not (args.out / "_writers" / f"rep{k}.json").exists():
            copy(con, args.base, args.out, k, last - timedelta(days=args.copies - 1 - k))
            print(f"copy {k + 1} of {args.copies}", flush=True)
    for n in args.subset:
        writers = [f"rep{k}" for k in range(args.copies - n, args.copies)]
        target = args.out.with_name(f"{args.out.name}-last{n}")
        if not target.exists():
            subset(args.out, target, writers)
            print(f"{target}: the last {n} copies", flush=True)


if __name__ == "__main__":
    main()
