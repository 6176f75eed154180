"""Map OTLP JSON traces of agents to tracekit v1 records (see ``docs/otlp.md``).

An agent invocation is a span with ``gen_ai.operation.name = "invoke_agent"``
(or an ``AGENT`` span kind, or the older shape: a
``gen_ai.agent.name`` with no operation). Its run's parent is the nearest
agent span above it, and the node that delegated is the tool span between
the two. The agent span with no agent above it is the root run; every other
span right under an agent span is a step of its run (what a step nests, such
as the model call inside it, is part of that step). tracekit's own attributes
(``tracekit.run_id`` ...), written by :mod:`tracekit.sdk`, win when present.

A trace's spans may be spread over many lines (a collector's file exporter
writes each batch as it goes), so :class:`OtlpConverter` takes every document
of a file first and resolves parents once at the end. It holds spans until
their trace is complete (:class:`~tracekit.intake.assemble.TraceAssembler`);
the mapping of whole traces is :func:`~tracekit.intake.otlp.mapping.map_traces`,
an agent span's records :mod:`tracekit.intake.otlp.records`.

Example:
    >>> doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{
    ...     "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
    ...     "name": "invoke_agent triage", "startTimeUnixNano": "1000000",
    ...     "endTimeUnixNano": "5000000", "attributes": [
    ...         {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
    ...         {"key": "gen_ai.agent.name", "value": {"stringValue": "triage"}}]}]}]}]}
    >>> [type(e).__name__ for e in otlp_to_events(doc)]
    ['RunStart', 'RunEnd']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from tracekit._util.quarantine import leave_out, quarantine
from tracekit.events import Enter, Event, Exit, Node
from tracekit.intake.assemble import TraceAssembler
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.decode_json import Span, decode_spans
from tracekit.intake.otlp.decode_json_fast import decode_spans_fast
from tracekit.intake.otlp.limits import check_limits, raw_text
from tracekit.intake.otlp.mapping import Reject, map_traces
from tracekit.intake.otlp.records import REFUSALS, event_sort_key, failure_of, pair_sort_key
from tracekit.intake.otlp.spans import Key
from tracekit.validate import VALUE_DEPTH_REASON

# REFUSALS, event_sort_key and failure_of live in .records; named here for their callers.
__all__ = [
    "REFUSALS",
    "OtlpConverter",
    "Reject",
    "document_spans",
    "event_sort_key",
    "failure_of",
    "json_spans",
    "otlp_to_events",
]

#: Traces remembered after they are mapped, so that a late span joins its trace.
_REMEMBER: Final = 1024


def otlp_to_events(doc: dict[str, Any]) -> list[Event]:
    """The v1 records of one OTLP JSON document, sorted by time.

    Raises:
        ValueError: the document is not OTLP traces or a span is malformed.
    """
    converter = OtlpConverter()
    converter.feed(doc)
    return converter.finish()


def document_spans(doc: dict[str, Any]) -> list[Span]:
    """The spans of a decoded ``TracesData`` document.

    Raises:
        ValueError: it is not OTLP traces, or a span in it is malformed.
    """
    try:
        return decode_spans(doc)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed OTLP ({type(exc).__name__}: {exc})") from None
    except RecursionError:
        raise ValueError(VALUE_DEPTH_REASON) from None


def json_spans(data: bytes | str) -> list[Span]:
    """The spans of one OTLP JSON document: typed structs when it can (several times faster), else dicts.

    Example:
        >>> json_spans(b'{"resourceSpans": []}')
        []

    Raises:
        msgspec.DecodeError: it is not JSON.
        ValueError: it is not OTLP traces, or a span in it is malformed.
    """
    try:
        return decode_spans_fast(data if isinstance(data, bytes) else data.encode())
    except (msgspec.ValidationError, ValueError, RecursionError):
        pass
    try:
        doc = msgspec.json.decode(data)
    except RecursionError:
        raise ValueError(VALUE_DEPTH_REASON) from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object") from None
    return document_spans(doc)


class OtlpConverter:
    """Collect the spans of many OTLP documents, then map them all at once.

    Example:
        >>> converter = OtlpConverter()
        >>> converter.feed({"resourceSpans": []})
        0
        >>> converter.finish()
        []
    """

    def __init__(self, assembler: TraceAssembler | None = None) -> None:
        #: The group-by-trace policy; a file's ticks are documents read.
        self.assembler = TraceAssembler(remember=_REMEMBER) if assembler is None else assembler
        self._docs = 0
        #: Where every span mapped so far went (agents, steps, wrappers, rejected).
        self.counts = SpanCounts()
        #: Spans refused by the mapping (those in a loop of parent links), as
        #: ``(line, text, reason)``; :meth:`take_rejects` hands them over.
        self.rejects: list[Reject] = []

    @property
    def pending(self) -> int:
        """How many spans are held, waiting to be mapped."""
        return self.assembler.pending

    def feed(self, doc: dict[str, Any], *, line: int = 0) -> int:
        """Take one document's spans; returns how many.

        Args:
            doc: a decoded ``TracesData`` / ``ExportTraceServiceRequest``.
            line: where it was read from; :meth:`finish_lines` gives it back.

        Raises:
            ValueError: the document is not OTLP traces, or a span in it is
                malformed; then nothing of it is kept.
        """
        spans = document_spans(doc)
        self._keep(spans, line)
        return len(spans)

    def feed_json(self, data: bytes | str, *, line: int = 0) -> int:
        """Take one document as JSON text (:func:`json_spans`); returns how many spans it held.

        Raises:
            msgspec.DecodeError: it is not JSON.
            ValueError: it is not OTLP traces, or a span in it is malformed.
        """
        spans = json_spans(data)
        self._keep(spans, line)
        return len(spans)

    def feed_spans(
        self, spans: list[Span], *, line: int = 0, now: float | None = None, checked: bool = False
    ) -> int:
        """Take spans decoded elsewhere (OTLP protobuf, a collector's spool); returns how many.

        Args:
            spans: the spans.
            line: where they came from (a line, a spool offset).
            now: the assembler's tick (a collector's clock); documents fed by default.
            checked: the spans met the limits at the door already (not checked again).

        Raises:
            ValueError: a span's times are out of range; then none of them is kept.
        """
        self._keep(spans, line, now, checked=checked)
        return len(spans)

    def take(self, traces: list[str]) -> list[tuple[int, Event]]:
        """Map and let go of the given traces (those held; others are ignored).

        For a caller that decides itself when a trace is complete (a live
        collector goes by time, not by documents).

        Returns:
            ``(line, record)`` pairs, as :meth:`finish_lines`.
        """
        return self._take(traces)

    def _keep(
        self, spans: list[Span], line: int, now: float | None = None, *, checked: bool = False
    ) -> None:
        if not checked:
            spans = self._within_limits(spans, line)
        self._docs += 1
        self.assembler.add(spans, position=line, now=self._docs if now is None else now)

    def _within_limits(self, spans: list[Span], line: int) -> list[Span]:
        """The spans that meet :mod:`~tracekit.intake.otlp.limits`; each other one a reject."""
        kept = []
        for span in spans:
            reason = check_limits(span)
            if reason is None:
                kept.append(span)
            else:
                self.rejects.append((span.line or line, raw_text(span), reason))
                self.counts.refused += 1
        return kept

    def take_complete(self, idle: int = 64) -> list[tuple[int, Event]]:
        """Map and let go of the traces that look complete; for reading big files.

        A trace looks complete once its root span has come with an end and
        ``idle`` documents have passed without a span of it. Spans of a trace
        that come even later are mapped on their own, so give exporters that
        deliver late (detached background agents) a generous ``idle``.

        Returns:
            ``(line, record)`` pairs, as :meth:`finish_lines`.
        """
        self.assembler.settle = idle
        return self._take(self.assembler.ready(now=self._docs))

    def finish_lines(self) -> list[tuple[int, Event]]:
        """Every record still to come, each with the line of the span it came from."""
        return self._take(self.assembler.held())

    def finish(self) -> list[Event]:
        """Every record of the spans fed so far, sorted by :func:`event_sort_key`."""
        return [event for _, event in self.finish_lines()]

    def take_rejects(self) -> list[Reject]:
        """The spans refused among those mapped so far, each handed over once.

        Returns:
            ``(line, text, reason)`` for each, the line being the one given to
            :meth:`feed` or :meth:`feed_json`.
        """
        rejects, self.rejects = self.rejects, []
        return rejects

    def _take(self, traces: list[str]) -> list[tuple[int, Event]]:
        if not traces:  # most lines of a big file complete no trace: nothing to map
            return []
        late = self.assembler.take_late(traces)
        spans = self.assembler.take(traces)
        pairs = self._map_quarantined(spans)
        return self._without_given(pairs, late) if late else pairs

    def _map_quarantined(self, spans: dict[Key, Span]) -> list[tuple[int, Event]]:
        """:func:`map_traces`; a trace it cannot map is bisected down to the spans at fault.

        Those spans are refused with the mapping's error; the rest of their
        trace is mapped without them, and every other trace as usual.
        """
        by_trace: dict[str, dict[Key, Span]] = {}
        for key, span in spans.items():
            by_trace.setdefault(key[0], {})[key] = span
        done = quarantine(list(by_trace.values()), self._map_part)
        pairs = [pair for part in done.results for pair in part]
        for trace, reason in done.rejected:
            pairs += self._map_without_poison(trace, reason)
        if done.rejected:
            pairs.sort(key=pair_sort_key)
        return pairs

    def _map_part(self, traces: Sequence[dict[Key, Span]]) -> list[tuple[int, Event]]:
        """Map whole traces; counts and rejects are kept only if the mapping succeeds."""
        spans = {key: span for trace in traces for key, span in trace.items()}
        counts = SpanCounts()
        rejects: list[Reject] = []
        pairs = map_traces(spans, rejects, counts, len(traces))
        self.counts.add(counts)
        self.rejects += rejects
        return pairs

    def _map_without_poison(self, trace: dict[Key, Span], reason: str) -> list[tuple[int, Event]]:
        """One trace the mapping fails on: its spans at fault refused, the rest mapped."""

        def works(part: list[Span]) -> bool:
            try:
                map_traces({(s.trace, s.id): s for s in part}, [], SpanCounts(), 1)
            except Exception:
                return False
            return True

        poison = leave_out(list(trace.values()), works)
        for span in poison:
            self.rejects.append((span.line, raw_text(span), f"the mapping failed on it: {reason}"))
            self.counts.refused += 1
        out = {id(span) for span in poison}
        left = {key: span for key, span in trace.items() if id(span) not in out}
        return self._map_part([left]) if left else []

    def _without_given(
        self, pairs: list[tuple[int, Event]], late: dict[Key, Span]
    ) -> list[tuple[int, Event]]:
        """Drop the records that reopened traces gave before their late spans came.

        Those are the records of their earlier spans mapped alone (the mapping
        is deterministic), keyed as the store keys them: a trace mapped again
        gives only what is new to a reader and to a store, and its earlier
        spans are counted once.
        """
        before = SpanCounts()
        traces = len({key[0] for key in late})
        given = {_event_key(event) for _, event in map_traces(dict(late), [], before, traces)}
        self.counts.add(before, -1)
        return [(line, event) for line, event in pairs if _event_key(event) not in given]


def _event_key(event: Event) -> tuple[Any, ...]:
    """A record's identity, as the store's ``event_key`` has it."""
    if isinstance(event, (Enter, Exit)):
        return (type(event).__name__, event.runId, event.invocationId)
    if isinstance(event, Node):
        return ("node", event.runId, event.id, event.ts, event.seq)
    return (type(event).__name__, event.runId)
