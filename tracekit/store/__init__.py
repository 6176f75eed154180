"""The DuckDB store: many runs in one file, ingested fast, nothing lost."""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from tracekit.store.store import Store

if _TYPE_CHECKING:
    from tracekit.store.ingest import IngestReport, SourceReport
    from tracekit.store.sink import StoreSink

# The ingest pipeline imports pyarrow (~80 ms) and the sink the event model:
# loaded on first use, so that commands that only read the store (tracekit
# fleet) pay for neither.
_LAZY = {
    "IngestReport": "tracekit.store.ingest",
    "SourceReport": "tracekit.store.ingest",
    "StoreSink": "tracekit.store.sink",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracekit.store' has no attribute {name!r}")
    return getattr(_importlib.import_module(module), name)


__all__ = ["IngestReport", "SourceReport", "Store", "StoreSink"]
