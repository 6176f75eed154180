"""Instrument Python agents: runs, steps and invocations as OTel spans and v1 records.

An integration for a framework (:mod:`tracekit.sdk.integrations`) needs no
more than these names: ``Scope`` and its kinds, ``AgentTracer``, and
``current_frame`` (the run or invocation the calling code is inside).

Example:
    >>> from tracekit.sdk import AgentTracer, MemorySink
    >>> tk = AgentTracer(MemorySink())
    >>> with tk.run("front_desk"):
    ...     with tk.delegate("billing", node="hand_over"):
    ...         pass
"""

from __future__ import annotations

from tracekit.sdk.batching import BatchingSink, BatchWriter, RetryLater
from tracekit.sdk.context import current_frame, propagate_context
from tracekit.sdk.guards import Guards
from tracekit.sdk.processor import TracekitSpanProcessor
from tracekit.sdk.scopes import Invocation, Run, Scope, Step
from tracekit.sdk.sinks import JsonlSink, MemorySink, Sink
from tracekit.sdk.tracer import AgentTracer

__all__ = [
    "AgentTracer",
    "BatchWriter",
    "BatchingSink",
    "Guards",
    "Invocation",
    "JsonlSink",
    "MemorySink",
    "RetryLater",
    "Run",
    "Scope",
    "Sink",
    "Step",
    "TracekitSpanProcessor",
    "current_frame",
    "propagate_context",
]
