"""The spans of tracekit's private provider: ids and context only, nothing recorded.

Without a provider of yours (and without ``set_global``), tracekit's spans
reach no processor and no exporter: the scopes write their own records. What
is left of a span is its place in the OpenTelemetry context: its trace and
span ids, which the records carry (``traceId``) and which spans you make
inside an agent, on a provider of yours, take as their parent. So the private
tracer makes only that: a non-recording span with the ids and flags the
SDK's default sampler (parent-based, always on) would give it. An SDK span
would cost about two thirds of an instrumented invocation, for nobody.

Example:
    >>> from opentelemetry import trace
    >>> tracer = PrivateTracer()
    >>> root = tracer.start_span("invoke_agent desk")
    >>> child = tracer.start_span("invoke_agent sql", trace.set_span_in_context(root))
    >>> child.get_span_context().trace_id == root.get_span_context().trace_id
    True
    >>> child.get_span_context().trace_flags.sampled, child.is_recording()
    (True, False)
"""

from __future__ import annotations

import random
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import (
    INVALID_SPAN_ID,
    INVALID_TRACE_ID,
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    TraceState,
    get_current_span,
)
from opentelemetry.trace.propagation import _SPAN_KEY

__all__ = ["PrivateTracer"]

_bits: Final = random.getrandbits
# A root's flags: sampled (the default sampler keeps roots), and the trace id
# is random (W3C's random-trace-id flag, where the API knows it).
_ROOT_FLAGS: Final = TraceFlags(TraceFlags.SAMPLED | getattr(TraceFlags, "RANDOM_TRACE_ID", 0))
# A child keeps its parent's sampled and random-id bits, as the SDK does.
_INHERITED: Final = _ROOT_FLAGS
_NO_STATE: Final = TraceState()
_RUNTIME: Final = getattr(otel_context, "_RUNTIME_CONTEXT", None)
_NONE_YET: Final = object()


class PrivateTracer:
    """``start_span`` for spans nobody records: a :class:`NonRecordingSpan` with fresh ids."""

    def __init__(self) -> None:
        # The last parent and what its children inherit: a run's invocations
        # share their parent, so most spans skip working it out again.
        self._last: tuple[object, int, TraceState, TraceFlags] = (
            _NONE_YET,
            0,
            _NO_STATE,
            _ROOT_FLAGS,
        )

    def start_span(self, name: str, context: Context | None = None, **_: Any) -> NonRecordingSpan:
        """A span with a new span id, in the trace of the context's span (or a new trace)."""
        parent = _parent(context)
        last, trace_id, state, flags = self._last
        if parent is not last:
            if parent is not None and parent.is_valid:
                trace_id, state = parent.trace_id, parent.trace_state
                flags = TraceFlags(parent.trace_flags & _INHERITED)
                self._last = (parent, trace_id, state, flags)
            else:
                trace_id, state, flags = _new_trace_id(), _NO_STATE, _ROOT_FLAGS
        span_id = _bits(64)
        while span_id == INVALID_SPAN_ID:  # pragma: no cover (1 in 2**64)
            span_id = _bits(64)
        return NonRecordingSpan(SpanContext(trace_id, span_id, False, flags, state))


def _parent(context: Context | None) -> SpanContext | None:
    """The span context of the context's span (the current context's by default), or None."""
    # The current span read from the context directly: get_current_span's
    # wrappers cost more than the rest of a private span.
    if context is None:
        if _RUNTIME is None:
            return get_current_span().get_span_context()
        context = _RUNTIME.get_current()
    span: Any = context.get(_SPAN_KEY)
    return span.get_span_context() if span is not None else None


def _new_trace_id() -> int:
    trace_id = _bits(128)
    while trace_id == INVALID_TRACE_ID:  # pragma: no cover (1 in 2**128)
        trace_id = _bits(128)
    return trace_id
