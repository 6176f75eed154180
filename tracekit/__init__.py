"""tracekit: see who called whom in multi-agent systems, and what failed where.

The public API is what ``__all__`` lists; everything else is private and may
change. ``tests/test_exported_members.py`` keeps this list honest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from tracekit._lazy import lazy_names as _lazy_names
from tracekit.errors import (
    AgentDepthExceededError,
    AgentError,
    AgentFailedError,
    AgentInvalidNameError,
    AgentNotAllowedError,
    AgentNotRegisteredError,
    AgentPendingError,
    AgentRecursionError,
    StoreError,
    StoreLockedError,
    TraceDamagedError,
    TraceFileError,
    TracekitError,
    TraceReadError,
)

if _TYPE_CHECKING:  # the lazy names below, for type checkers
    from tracekit.dashboards.page import write_dashboard
    from tracekit.describe import describe_agent_tree, describe_forest
    from tracekit.events import (
        Enter,
        ErrorInfo,
        Event,
        Exit,
        Node,
        RunEnd,
        RunStart,
        decode_event,
        encode_event,
    )
    from tracekit.failures import classify_events, classify_store
    from tracekit.fleet import FleetReport, fleet_report
    from tracekit.readers import ReadResult, read_trace
    from tracekit.readers.otlp import OtlpConverter, otlp_to_events
    from tracekit.sdk import AgentTracer, Guards, JsonlSink, MemorySink, Sink, propagate_context
    from tracekit.simulate import SimulationRates, SimulationReport, simulate
    from tracekit.tree import (
        AgentStep,
        AgentTree,
        Forest,
        Integrity,
        NodeStep,
        RunTree,
        agent_tree,
        agents_in,
        build_forest,
    )
    from tracekit.tree_html import tree_to_html

__version__ = "0.1.0"

# Public names loaded on first use, so that ``import tracekit`` (and so every
# CLI call) pays only for the modules it uses.
_LAZY: dict[str, str] = {
    # The event model, the readers, the tree and the simulator: msgspec and some
    # 80 ms of imports that a command such as `tracekit fleet` does not use.
    "describe_agent_tree": "tracekit.describe",
    "describe_forest": "tracekit.describe",
    "Enter": "tracekit.events",
    "ErrorInfo": "tracekit.events",
    "Event": "tracekit.events",
    "Exit": "tracekit.events",
    "Node": "tracekit.events",
    "RunEnd": "tracekit.events",
    "RunStart": "tracekit.events",
    "decode_event": "tracekit.events",
    "encode_event": "tracekit.events",
    "ReadResult": "tracekit.readers",
    "read_trace": "tracekit.readers",
    "OtlpConverter": "tracekit.readers.otlp",
    "otlp_to_events": "tracekit.readers.otlp",
    "SimulationRates": "tracekit.simulate",
    "SimulationReport": "tracekit.simulate",
    "simulate": "tracekit.simulate",
    "AgentStep": "tracekit.tree",
    "AgentTree": "tracekit.tree",
    "Forest": "tracekit.tree",
    "Integrity": "tracekit.tree",
    "NodeStep": "tracekit.tree",
    "RunTree": "tracekit.tree",
    "agent_tree": "tracekit.tree",
    "agents_in": "tracekit.tree",
    "build_forest": "tracekit.tree",
    "tree_to_html": "tracekit.tree_html",
    # The SDK imports opentelemetry-sdk (~90 ms), which the CLI never needs.
    "AgentTracer": "tracekit.sdk",
    "Guards": "tracekit.sdk",
    "JsonlSink": "tracekit.sdk",
    "MemorySink": "tracekit.sdk",
    "Sink": "tracekit.sdk",
    "propagate_context": "tracekit.sdk",
    "RootCause": "tracekit.notebook",
    "RunView": "tracekit.notebook",
    "IngestReport": "tracekit.store",
    "Store": "tracekit.store",
    "StoreSink": "tracekit.store",
    "invocations_frame": "tracekit.invocations",
    "open_run": "tracekit.notebook",
    "read_invocations": "tracekit.invocations",
    # Fleet health (issue 5): pandas for the store side, plotly for the page.
    "FleetReport": "tracekit.fleet",
    "classify_events": "tracekit.failures",
    "classify_store": "tracekit.failures",
    "fleet_report": "tracekit.fleet",
    "write_dashboard": "tracekit.dashboards.page",
}


__getattr__ = _lazy_names(__name__, _LAZY)


__all__ = [
    "AgentDepthExceededError",
    "AgentError",
    "AgentFailedError",
    "AgentInvalidNameError",
    "AgentNotAllowedError",
    "AgentNotRegisteredError",
    "AgentPendingError",
    "AgentRecursionError",
    "AgentStep",
    "AgentTracer",
    "AgentTree",
    "Enter",
    "ErrorInfo",
    "Event",
    "Exit",
    "FleetReport",
    "Forest",
    "Guards",
    "IngestReport",
    "Integrity",
    "JsonlSink",
    "MemorySink",
    "Node",
    "NodeStep",
    "OtlpConverter",
    "ReadResult",
    "RootCause",
    "RunEnd",
    "RunStart",
    "RunTree",
    "RunView",
    "SimulationRates",
    "SimulationReport",
    "Sink",
    "Store",
    "StoreError",
    "StoreLockedError",
    "StoreSink",
    "TraceDamagedError",
    "TraceFileError",
    "TraceReadError",
    "TracekitError",
    "__version__",
    "agent_tree",
    "agents_in",
    "build_forest",
    "classify_events",
    "classify_store",
    "decode_event",
    "describe_agent_tree",
    "describe_forest",
    "encode_event",
    "fleet_report",
    "invocations_frame",
    "open_run",
    "otlp_to_events",
    "propagate_context",
    "read_invocations",
    "read_trace",
    "simulate",
    "tree_to_html",
    "write_dashboard",
]
