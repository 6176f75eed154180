"""The DuckDB store: many runs in one file, ingested fast, nothing lost.

The store owns the SQL on its tables: every other stage reads them through
the named reads exported here (the fleet report's, the pages', the
collector's), never with SQL of its own (``tests/test_layers.py`` checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from tracekit._util.lazy import lazy_names as _lazy_names
from tracekit.store.store import Store

if _TYPE_CHECKING:
    from tracekit.store.circles import CircleCost, LoopRow, loop_circles, loop_rows, loops
    from tracekit.store.fetched import Rows, fetch
    from tracekit.store.find import FindResult
    from tracekit.store.findparse import FindSyntaxError
    from tracekit.store.fleet_agents import (
        CALL_STATUSES_RAN,
        calls_source,
        edge_rows,
        latency_rows,
        token_rows,
    )
    from tracekit.store.fleet_filter import FleetFilter
    from tracekit.store.fleet_runs import (
        bucket_step,
        circle_rows,
        degraded_rows,
        over_time_rows,
        run_groups,
        session_counts,
        worst_rows,
    )
    from tracekit.store.hard import HardFindings, classify_hard, revisited_runs
    from tracekit.store.ingest import IngestReport, SourceReport
    from tracekit.store.page_reads import (
        StoreSpan,
        circle_examples,
        origin_failures,
        run_calls,
        run_summaries,
        store_span,
    )
    from tracekit.store.path_shares import other_runs, path_counts, root_agent
    from tracekit.store.progress import kept_lines, next_line, served_sources, stored_marker
    from tracekit.store.reader import StoreReader
    from tracekit.store.sink import StoreSink

# The ingest pipeline imports pyarrow (~80 ms) and the sink the event model:
# loaded on first use, so that commands that only read the store (tracekit
# fleet) pay for neither.
_LAZY = {
    "CALL_STATUSES_RAN": "tracekit.store.fleet_agents",
    "CircleCost": "tracekit.store.circles",
    "FindResult": "tracekit.store.find",
    "FindSyntaxError": "tracekit.store.findparse",
    "FleetFilter": "tracekit.store.fleet_filter",
    "HardFindings": "tracekit.store.hard",
    "IngestReport": "tracekit.store.ingest",
    "LoopRow": "tracekit.store.circles",
    "Rows": "tracekit.store.fetched",
    "SourceReport": "tracekit.store.ingest",
    "StoreReader": "tracekit.store.reader",
    "StoreSink": "tracekit.store.sink",
    "StoreSpan": "tracekit.store.page_reads",
    "bucket_step": "tracekit.store.fleet_runs",
    "calls_source": "tracekit.store.fleet_agents",
    "circle_examples": "tracekit.store.page_reads",
    "circle_rows": "tracekit.store.fleet_runs",
    "classify_hard": "tracekit.store.hard",
    "degraded_rows": "tracekit.store.fleet_runs",
    "edge_rows": "tracekit.store.fleet_agents",
    "fetch": "tracekit.store.fetched",
    "kept_lines": "tracekit.store.progress",
    "latency_rows": "tracekit.store.fleet_agents",
    "loop_circles": "tracekit.store.circles",
    "loop_rows": "tracekit.store.circles",
    "loops": "tracekit.store.circles",
    "next_line": "tracekit.store.progress",
    "origin_failures": "tracekit.store.page_reads",
    "other_runs": "tracekit.store.path_shares",
    "over_time_rows": "tracekit.store.fleet_runs",
    "path_counts": "tracekit.store.path_shares",
    "revisited_runs": "tracekit.store.hard",
    "root_agent": "tracekit.store.path_shares",
    "run_calls": "tracekit.store.page_reads",
    "run_groups": "tracekit.store.fleet_runs",
    "run_summaries": "tracekit.store.page_reads",
    "served_sources": "tracekit.store.progress",
    "session_counts": "tracekit.store.fleet_runs",
    "store_span": "tracekit.store.page_reads",
    "stored_marker": "tracekit.store.progress",
    "token_rows": "tracekit.store.fleet_agents",
    "worst_rows": "tracekit.store.fleet_runs",
}


__getattr__ = _lazy_names(__name__, _LAZY)


__all__ = [
    "CALL_STATUSES_RAN",
    "CircleCost",
    "FindResult",
    "FindSyntaxError",
    "FleetFilter",
    "HardFindings",
    "IngestReport",
    "LoopRow",
    "Rows",
    "SourceReport",
    "Store",
    "StoreReader",
    "StoreSink",
    "StoreSpan",
    "bucket_step",
    "calls_source",
    "circle_examples",
    "circle_rows",
    "classify_hard",
    "degraded_rows",
    "edge_rows",
    "fetch",
    "kept_lines",
    "latency_rows",
    "loop_circles",
    "loop_rows",
    "loops",
    "next_line",
    "origin_failures",
    "other_runs",
    "over_time_rows",
    "path_counts",
    "revisited_runs",
    "root_agent",
    "run_calls",
    "run_groups",
    "run_summaries",
    "served_sources",
    "session_counts",
    "store_span",
    "stored_marker",
    "token_rows",
    "worst_rows",
]
