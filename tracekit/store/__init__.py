"""The DuckDB store: many runs in one file, ingested fast, nothing lost."""

from tracekit.store.ingest import IngestReport, SourceReport
from tracekit.store.sink import StoreSink
from tracekit.store.store import Store

__all__ = ["IngestReport", "SourceReport", "Store", "StoreSink"]
