"""The DuckDB store: many runs in one file, ingested fast, nothing lost."""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from tracekit._util.lazy import lazy_names as _lazy_names
from tracekit.store.store import Store

if _TYPE_CHECKING:
    from tracekit.store.circles import CircleCost, LoopRow, loop_circles, loops
    from tracekit.store.find import FindResult
    from tracekit.store.findparse import FindSyntaxError
    from tracekit.store.ingest import IngestReport, SourceReport
    from tracekit.store.reader import StoreReader
    from tracekit.store.sink import StoreSink

# The ingest pipeline imports pyarrow (~80 ms) and the sink the event model:
# loaded on first use, so that commands that only read the store (tracekit
# fleet) pay for neither.
_LAZY = {
    "CircleCost": "tracekit.store.circles",
    "FindResult": "tracekit.store.find",
    "FindSyntaxError": "tracekit.store.findparse",
    "IngestReport": "tracekit.store.ingest",
    "LoopRow": "tracekit.store.circles",
    "SourceReport": "tracekit.store.ingest",
    "StoreReader": "tracekit.store.reader",
    "StoreSink": "tracekit.store.sink",
    "loop_circles": "tracekit.store.circles",
    "loops": "tracekit.store.circles",
}


__getattr__ = _lazy_names(__name__, _LAZY)


__all__ = [
    "CircleCost",
    "FindResult",
    "FindSyntaxError",
    "IngestReport",
    "LoopRow",
    "SourceReport",
    "Store",
    "StoreReader",
    "StoreSink",
    "loop_circles",
    "loops",
]
