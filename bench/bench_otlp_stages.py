"""Where an OTLP ingest's CPU goes, stage by stage (the profile behind bench_otlp_ingest's figures).

Usage:
    PYTHONPATH=. .venv/bin/python bench/bench_otlp_stages.py FILE.jsonl STORE.duckdb

Wraps the stages of ``tracekit ingest`` with ``time.process_time`` (decode,
set-based mapping, the per-span feed of the traces left, load, derive,
classify) and prints CPU seconds for each and the total; set
``TRACEKIT_OTLP_COLUMNS=0`` for the per-span path.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tracekit.intake.otlp.batches as batches
import tracekit.store.ingest as ingest
import tracekit.store.otlp_columns as columns
from tracekit.store.db import connect

SPENT: dict[str, float] = {}


def _timed(module: Any, name: str) -> None:
    inner: Callable[..., Any] = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[name] = SPENT.get(name, 0.0) + time.process_time() - started

    setattr(module, name, timed)


def main() -> None:
    for module, name in (
        (columns, "decode_lines"),
        (columns, "map_spans"),
        (columns, "_mapped"),
        (batches, "_feed_kept"),
        (batches, "_feed"),
        (ingest, "load_batch"),
        (ingest, "derive"),
        (ingest, "classify_store"),
    ):
        _timed(module, name)
    con = connect(Path(sys.argv[2]))
    started = time.process_time()
    ingest.ingest_paths(con, [sys.argv[1]])
    print(f"total {time.process_time() - started:.2f} CPU-s")
    for name, spent in SPENT.items():
        print(f"  {name:16} {spent:6.2f}")


if __name__ == "__main__":
    main()
