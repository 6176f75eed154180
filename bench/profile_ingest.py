"""Where a v1 ingest's CPU goes: every statement it runs, timed in process.

Usage:
    .venv/bin/python bench/profile_ingest.py FILE STORE [--top 30]

Ingests FILE into a new STORE with ``Store.ingest`` and prints the CPU seconds
(``time.process_time``: every thread of the process) of each distinct statement
(its first 90 characters; a statement run once a chunk is summed), and of the
derive and the classification as wholes. The connection is wrapped, not patched:
the ingest runs as it does for ``tracekit ingest``.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path
from typing import Any

import tracekit.store.ingest as ingest
from tracekit import Store

STATS: collections.defaultdict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])


class _Timed:
    """A DuckDB connection whose ``execute`` adds its CPU time to ``STATS``."""

    def __init__(self, con: Any) -> None:
        self._con = con

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> _Timed:
        start = time.process_time()
        self._con.execute(sql, *args, **kwargs)
        entry = STATS[" ".join(sql.split())[:90]]
        entry[0] += 1
        entry[1] += time.process_time() - start
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _whole(name: str, function: Any) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            STATS[name.upper()][1] += time.process_time() - start

    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("store", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    paths = ingest.ingest_paths
    ingest.ingest_paths = lambda con, *a, **k: paths(_Timed(con), *a, **k)  # type: ignore[assignment]
    ingest.derive = _whole("derive", ingest.derive)  # type: ignore[assignment]
    ingest.classify_store = _whole("classify", ingest.classify_store)  # type: ignore[assignment]
    start = time.process_time()
    with Store(args.store) as store:
        report = store.ingest(args.file)
    print(f"ingest and close: {time.process_time() - start:.2f} CPU-s")
    for key, (count, seconds) in sorted(STATS.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{seconds:8.2f} {int(count):4d}  {key}")
    print(report.reconciliation())


if __name__ == "__main__":
    main()
