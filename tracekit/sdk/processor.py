"""The span processor: the sinks, the record counter, and the provider's flush and shutdown.

Each scope writes its own records through :meth:`TracekitSpanProcessor.record_start`
right after its span starts (so a process that dies mid-run still leaves every
started invocation in the file, shown as running) and
:meth:`~TracekitSpanProcessor.record_end` right after it ends. That is the hot
path: no hand-over through ``on_start``/``on_end``, and no attribute read back
through OpenTelemetry's locked, validating attribute map. A user's other spans
on the same provider (and another ``AgentTracer``'s) pass by untouched.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from opentelemetry.sdk.trace import SpanProcessor

from tracekit.events import Event
from tracekit.sdk.sinks import Sink

__all__ = ["TracekitSpanProcessor"]

_log = logging.getLogger("tracekit.sdk")


class _Recorded(Protocol):
    processor: TracekitSpanProcessor

    def start_event(self, start_ns: int, trace_id: int, service: str | None) -> Event | None: ...
    def end_event(self, end_ns: int, service: str | None) -> Event | None: ...


class TracekitSpanProcessor(SpanProcessor):
    """Turn tracekit's spans into v1 records and hand them to the sinks.

    Every record gets ``seq``, this writer's own counter. A sink that raises
    is logged once and skipped for that record; the agent never sees it.
    """

    def __init__(self, sinks: Sequence[Sink], *, service: str | None = None) -> None:
        self.sinks = tuple(sinks)
        self._service = service
        self._seq = itertools.count(1)
        self._failed: set[int] = set()

    # -- OpenTelemetry hooks (a span's records are written by its scope) ----
    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.flush()
        return True

    # -- records ---------------------------------------------------------
    def record_start(self, owner: _Recorded, start_ns: int, trace_id: int) -> None:
        """Write the record of a scope's start (also used for unsampled spans)."""
        event = owner.start_event(start_ns, trace_id, self._service)
        if event is not None:
            event.seq = next(self._seq)
            for sink in self.sinks:  # emit(), inlined: this is the hot path
                try:
                    sink.emit(event)
                except Exception as exc:
                    self._sink_failed(sink, exc)

    def record_end(self, owner: _Recorded, end_ns: int) -> None:
        """Write the record of a scope's end."""
        event = owner.end_event(end_ns, self._service)
        if event is not None:
            event.seq = next(self._seq)
            for sink in self.sinks:
                try:
                    sink.emit(event)
                except Exception as exc:
                    self._sink_failed(sink, exc)

    def emit(self, event: Event) -> None:
        """Hand one record to every sink; a failing sink is logged once."""
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception as exc:
                self._sink_failed(sink, exc)

    def flush(self) -> None:
        """Flush every sink, shielding the caller from failures."""
        self._each("flush")

    def close(self) -> None:
        """Close every sink, shielding the caller from failures."""
        self._each("close")

    def _each(self, method: str) -> None:
        for sink in self.sinks:
            try:
                getattr(sink, method)()
            except Exception as exc:
                self._sink_failed(sink, exc)

    def _sink_failed(self, sink: Any, exc: Exception) -> None:
        if id(sink) in self._failed:
            return
        self._failed.add(id(sink))
        _log.warning(
            "tracekit: sink %r failed (%s: %s); its records are being dropped, "
            "the agents carry on. Further failures of this sink are not logged.",
            sink,
            type(exc).__name__,
            exc,
        )
