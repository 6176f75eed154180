"""tracekit: see who called whom in multi-agent systems, and what failed where.

The public API is what ``__all__`` lists; everything else is private and may
change. One table, ``_LAZY``, says where each lazily loaded name lives; it
drives both ``__getattr__`` and ``__all__``, and ``tests/test_exported_members.py``
checks the ``TYPE_CHECKING`` block (what type checkers see) against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from tracekit._util.lazy import lazy_names as _lazy_names
from tracekit._version import __version__
from tracekit.errors import (
    AgentDepthExceededError,
    AgentError,
    AgentFailedError,
    AgentInvalidNameError,
    AgentNotAllowedError,
    AgentNotRegisteredError,
    AgentPendingError,
    AgentRecursionError,
    InvalidRecordError,
    RunNotFoundError,
    SessionNotFoundError,
    StoreError,
    StoreLockedError,
    TraceDamagedError,
    TraceFileError,
    TracekitError,
    TraceReadError,
)

if _TYPE_CHECKING:  # the lazy names of _LAZY, for type checkers
    from tracekit.dashboards.page import write_dashboard
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
    from tracekit.failures import classify_events
    from tracekit.fleet import FleetReport, fleet_report
    from tracekit.fleet.rare import FleetComparison, against_fleet
    from tracekit.intake import ReadResult, read_trace
    from tracekit.intake.otlp.convert import OtlpConverter, otlp_to_events
    from tracekit.lake import export_lake
    from tracekit.notebook import RootCause, RunView, SessionView, open_run, open_session
    from tracekit.sdk import AgentTracer, Guards, JsonlSink, MemorySink, Sink, propagate_context
    from tracekit.sdk.http_sink import HttpSink
    from tracekit.simulation import SimulationRates, SimulationReport, simulate
    from tracekit.store import FindResult, FindSyntaxError, IngestReport, Store, StoreSink
    from tracekit.store.classify import classify_store
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
    from tracekit.tree.diff import RunDiff, Slower, diff_runs, diff_steps
    from tracekit.tree.frame import invocations_frame, read_invocations
    from tracekit.tree.html import tree_to_html
    from tracekit.tree.text import describe_agent_tree, describe_forest

# Public names loaded on first use, so that ``import tracekit`` (and so every
# CLI call) pays only for the modules it uses.
_LAZY: dict[str, str] = {
    # The event model and intake (the readers): msgspec, not needed by `tracekit fleet`.
    "Enter": "tracekit.events",
    "ErrorInfo": "tracekit.events",
    "Event": "tracekit.events",
    "Exit": "tracekit.events",
    "Node": "tracekit.events",
    "RunEnd": "tracekit.events",
    "RunStart": "tracekit.events",
    "decode_event": "tracekit.events",
    "encode_event": "tracekit.events",
    "ReadResult": "tracekit.intake",
    "read_trace": "tracekit.intake",
    "OtlpConverter": "tracekit.intake.otlp.convert",
    "otlp_to_events": "tracekit.intake.otlp.convert",
    # The SDK imports opentelemetry-sdk (~90 ms), which the CLI never needs.
    "AgentTracer": "tracekit.sdk",
    "Guards": "tracekit.sdk",
    "JsonlSink": "tracekit.sdk",
    "HttpSink": "tracekit.sdk.http_sink",
    "MemorySink": "tracekit.sdk",
    "Sink": "tracekit.sdk",
    "propagate_context": "tracekit.sdk",
    # The tree: its model and builder, its text, HTML and DataFrame.
    "AgentStep": "tracekit.tree",
    "AgentTree": "tracekit.tree",
    "Forest": "tracekit.tree",
    "Integrity": "tracekit.tree",
    "NodeStep": "tracekit.tree",
    "RunTree": "tracekit.tree",
    "agent_tree": "tracekit.tree",
    "agents_in": "tracekit.tree",
    "build_forest": "tracekit.tree",
    "describe_agent_tree": "tracekit.tree.text",
    "describe_forest": "tracekit.tree.text",
    "tree_to_html": "tracekit.tree.html",
    "invocations_frame": "tracekit.tree.frame",
    "read_invocations": "tracekit.tree.frame",
    "RunDiff": "tracekit.tree.diff",
    "Slower": "tracekit.tree.diff",
    "diff_runs": "tracekit.tree.diff",
    "diff_steps": "tracekit.tree.diff",
    # The store, fleet health and what is drawn from them (pandas, plotly).
    "IngestReport": "tracekit.store",
    "Store": "tracekit.store",
    "FindResult": "tracekit.store",
    "FindSyntaxError": "tracekit.store",
    "StoreSink": "tracekit.store",
    "classify_events": "tracekit.failures",
    "classify_store": "tracekit.store.classify",
    "FleetReport": "tracekit.fleet",
    "fleet_report": "tracekit.fleet",
    "FleetComparison": "tracekit.fleet.rare",
    "against_fleet": "tracekit.fleet.rare",
    "export_lake": "tracekit.lake",
    "write_dashboard": "tracekit.dashboards.page",
    "RootCause": "tracekit.notebook",
    "RunView": "tracekit.notebook",
    "open_run": "tracekit.notebook",
    "SessionView": "tracekit.notebook",
    "open_session": "tracekit.notebook",
    # The simulator.
    "SimulationRates": "tracekit.simulation",
    "SimulationReport": "tracekit.simulation",
    "simulate": "tracekit.simulation",
}

_EAGER = (
    "AgentDepthExceededError",
    "AgentError",
    "AgentFailedError",
    "AgentInvalidNameError",
    "AgentNotAllowedError",
    "AgentNotRegisteredError",
    "AgentPendingError",
    "AgentRecursionError",
    "InvalidRecordError",
    "RunNotFoundError",
    "SessionNotFoundError",
    "StoreError",
    "StoreLockedError",
    "TraceDamagedError",
    "TraceFileError",
    "TraceReadError",
    "TracekitError",
    "__version__",
)

__getattr__ = _lazy_names(__name__, _LAZY)

__all__ = sorted([*_EAGER, *_LAZY])
