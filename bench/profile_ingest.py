"""Where a v1 ingest's CPU goes: every statement it runs, timed in process.

Usage:
    .venv/bin/python bench/profile_ingest.py FILE STORE [--top 30]

Ingests FILE into a new STORE with ``Store.ingest`` and prints the CPU seconds
(``time.process_time``: every thread of the process) and the wall seconds of
each distinct statement (its first 90 characters; a statement run once a chunk
is summed, but each ``COMMIT`` apart: the one that checkpoints stands out), of
the Python that turns a chunk into an Arrow table, and of the derive, the
classification and the closing of the store as wholes. The connection is
wrapped, not patched: the ingest runs as it does for ``tracekit ingest``.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path
from typing import Any

import tracekit.store.ingest as ingest
from tracekit import Store

# statement -> [times run, CPU seconds, wall seconds]
STATS: collections.defaultdict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])


class _Timed:
    """A DuckDB connection whose ``execute`` adds its CPU time to ``STATS``."""

    def __init__(self, con: Any) -> None:
        self._con = con

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> _Timed:
        start, wall = time.process_time(), time.perf_counter()
        self._con.execute(sql, *args, **kwargs)
        key = " ".join(sql.split())[:90]
        if key == "COMMIT":
            key = f"COMMIT #{int(STATS['COMMIT'][0])}"
            STATS["COMMIT"][0] += 1
        _add(key, start, wall)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _add(key: str, start: float, wall: float) -> None:
    entry = STATS[key]
    entry[0] += 1
    entry[1] += time.process_time() - start
    entry[2] += time.perf_counter() - wall


def _whole(name: str, function: Any) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start, wall = time.process_time(), time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _add(name, start, wall)

    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("store", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    paths = ingest.ingest_paths
    timed: Any = lambda con, *a, **k: paths(_Timed(con), *a, **k)  # type: ignore[arg-type]  # noqa: E731
    ingest.ingest_paths = timed
    ingest.derive = _whole("DERIVE", ingest.derive)
    ingest.classify_store = _whole("CLASSIFY", ingest.classify_store)
    ingest.chunk_table = _whole("PYTHON chunk_table", ingest.chunk_table)
    start, wall = time.process_time(), time.perf_counter()
    store = Store(args.store)
    report = store.ingest(args.file)
    closing, closing_wall = time.process_time(), time.perf_counter()
    store.close()
    _add("CLOSE", closing, closing_wall)
    print(
        f"ingest and close: {time.process_time() - start:.2f} CPU-s,"
        f" {time.perf_counter() - wall:.2f} s; load average {os.getloadavg()[0]:.1f}"
    )
    print("   CPU-s   wall-s  runs  statement")
    STATS.pop("COMMIT", None)  # only its count
    for key, (count, cpu, secs) in sorted(STATS.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{cpu:8.2f} {secs:8.2f} {int(count):5d}  {key}")
    print(report.reconciliation())


if __name__ == "__main__":
    main()
