"""Map OTLP JSON traces of agents to tracekit v1 records (see ``docs/otlp.md``).

An agent invocation is a span with ``gen_ai.operation.name = "invoke_agent"``
(or ``openinference.span.kind = "AGENT"``, or the older shape: a
``gen_ai.agent.name`` with no operation). Its run's parent is the nearest
agent span above it, and the node that delegated is the tool span between
the two. The agent span with no agent above it is the root run; every other
span right under an agent span is a step of its run (what a step nests, such
as the model call inside it, is part of that step). tracekit's own attributes
(``tracekit.run_id`` ...), written by :mod:`tracekit.sdk`, win when present.

A trace's spans may be spread over many lines (a collector's file exporter
writes each batch as it goes), so :class:`OtlpConverter` takes every document
of a file first and resolves parents once at the end.

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

from typing import Any, Final, Literal, cast

import msgspec

from tracekit.events import (
    EdgeInfo,
    Enter,
    ErrorInfo,
    Event,
    Exit,
    Kind,
    Node,
    RunEnd,
    RunStart,
    Status,
    Usage,
)
from tracekit.intake.otlp.decode_json import Span, check_span, decode_spans
from tracekit.intake.otlp.decode_json_fast import decode_spans_fast
from tracekit.intake.otlp.edges import OTEL
from tracekit.intake.otlp.errors import CANCELLED_CODES, agent_errors
from tracekit.intake.otlp.kinds import session_of
from tracekit.intake.otlp.spans import Key, SpanIndex, parent_loops
from tracekit.intake.otlp.steps import Steps
from tracekit.validate import VALUE_DEPTH_REASON

__all__ = ["OtlpConverter", "event_sort_key", "failure_of", "otlp_to_events"]

REFUSALS: Final = frozenset(
    {
        "AGENT_RECURSION",
        "AGENT_DEPTH_EXCEEDED",
        "AGENT_NOT_ALLOWED",
        "AGENT_NOT_REGISTERED",
        "AGENT_INVALID_NAME",
        "AGENT_INPUT_INVALID",
    }
)
_CANCELLED: Final = CANCELLED_CODES
_STATUSES: Final = frozenset({"ok", "error", "refused", "cancelled", "pending"})
_KINDS: Final = frozenset({"delegate", "handoff", "subagent"})
_FAILURES: Final = frozenset({"delegation", "agent"})
_Failure = Literal["delegation", "agent"]
_NS_PER_MS: Final = 1_000_000  # an int: int / int is correctly rounded, int / 1e6 is not
_RANK: Final = {RunStart: 0, Enter: 1, Node: 2, Exit: 3, RunEnd: 4}
#: A span the mapping refused: its line, a short text naming it, and the reason.
Reject = tuple[int, str, str]


def event_sort_key(event: Event) -> tuple[float, int, str, str]:
    """Order records by time; at one moment a start before a step before an end.

    Ties between records of different runs fall back to their ids, so one set
    of records always sorts to one order.
    """
    if isinstance(event, (Enter, Exit)):
        return (event.ts, _RANK[type(event)], event.invocationId, "")
    if isinstance(event, Node):
        return (event.ts, 2, event.runId, event.id)
    return (event.ts, _RANK[type(event)], event.runId, "")


def failure_of(error: ErrorInfo | None) -> _Failure | None:
    """The ``run.end`` failure an error means: ``delegation`` for a circle, else ``agent``."""
    if error is None or error.code in _CANCELLED:
        return None
    return "delegation" if error.code == "AGENT_RECURSION" else "agent"


def otlp_to_events(doc: dict[str, Any]) -> list[Event]:
    """The v1 records of one OTLP JSON document, sorted by time.

    Raises:
        ValueError: the document is not OTLP traces or a span is malformed.
    """
    converter = OtlpConverter()
    converter.feed(doc)
    return converter.finish()


class OtlpConverter:
    """Collect the spans of many OTLP documents, then map them all at once.

    Example:
        >>> converter = OtlpConverter()
        >>> converter.feed({"resourceSpans": []})
        0
        >>> converter.finish()
        []
    """

    def __init__(self) -> None:
        self._traces: dict[str, dict[str, Span]] = {}
        self._touched: dict[str, int] = {}  # trace -> the document that last added to it
        self._rooted: set[str] = set()  # traces whose root span has come, ended
        self._docs = 0
        self.skipped = 0  # spans outside any agent run, among those mapped so far
        #: Spans refused by the mapping (those in a loop of parent links), as
        #: ``(line, text, reason)``; :meth:`take_rejects` hands them over.
        self.rejects: list[Reject] = []

    @property
    def pending(self) -> int:
        """How many spans are held, waiting to be mapped."""
        return sum(map(len, self._traces.values()))

    def feed(self, doc: dict[str, Any], *, line: int = 0) -> int:
        """Take one document's spans; returns how many.

        Args:
            doc: a decoded ``TracesData`` / ``ExportTraceServiceRequest``.
            line: where it was read from; :meth:`finish_lines` gives it back.

        Raises:
            ValueError: the document is not OTLP traces, or a span in it is
                malformed; then nothing of it is kept.
        """
        try:
            spans = decode_spans(doc)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed OTLP ({type(exc).__name__}: {exc})") from None
        except RecursionError:
            raise ValueError(VALUE_DEPTH_REASON) from None
        self._keep(spans, line)
        return len(spans)

    def feed_json(self, data: bytes | str, *, line: int = 0) -> int:
        """Take one document as JSON text; returns how many spans it held.

        Decodes straight into typed structs when it can (several times faster),
        else as :meth:`feed` does.

        Raises:
            msgspec.DecodeError: it is not JSON.
            ValueError: it is not OTLP traces, or a span in it is malformed.
        """
        try:
            spans = decode_spans_fast(data if isinstance(data, bytes) else data.encode())
        except (msgspec.ValidationError, ValueError, RecursionError):
            try:
                doc = msgspec.json.decode(data)
            except RecursionError:
                raise ValueError(VALUE_DEPTH_REASON) from None
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object") from None
            return self.feed(doc, line=line)
        self._keep(spans, line)
        return len(spans)

    def feed_spans(self, spans: list[Span], *, line: int = 0) -> int:
        """Take spans decoded elsewhere (OTLP protobuf, a collector's spool); returns how many.

        Raises:
            ValueError: a span's times are out of range; then none of them is kept.
        """
        self._keep(spans, line)
        return len(spans)

    def take(self, traces: list[str]) -> list[tuple[int, Event]]:
        """Map and let go of the given traces (those held; others are ignored).

        For a caller that decides itself when a trace is complete (a live
        collector goes by time, not by documents).

        Returns:
            ``(line, record)`` pairs, as :meth:`finish_lines`.
        """
        return self._take([t for t in traces if t in self._traces])

    def _keep(self, spans: list[Span], line: int) -> None:
        for span in spans:  # all checked before any is kept: a bad line is refused whole
            check_span(span)
        self._docs += 1
        for span in spans:
            span.line = line
            trace = self._traces.setdefault(span.trace, {})
            seen = trace.get(span.id)
            if seen is None or (seen.end is None and span.end is not None):
                trace[span.id] = span
            self._touched[span.trace] = self._docs
            if not span.parent and span.end is not None:
                self._rooted.add(span.trace)

    def take_complete(self, idle: int = 64) -> list[tuple[int, Event]]:
        """Map and let go of the traces that look complete; for reading big files.

        A trace looks complete once its root span has come with an end and
        ``idle`` documents have passed without a span of it. Spans of a trace
        that come even later are mapped on their own, so give exporters that
        deliver late (detached background agents) a generous ``idle``.

        Returns:
            ``(line, record)`` pairs, as :meth:`finish_lines`.
        """
        done = [t for t in self._rooted if self._docs - self._touched[t] >= idle]
        return self._take(done)

    def finish_lines(self) -> list[tuple[int, Event]]:
        """Every record still to come, each with the line of the span it came from."""
        return self._take(list(self._traces))

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
        spans: dict[tuple[str, str], Span] = {}
        for trace in traces:
            for span_id, span in self._traces.pop(trace).items():
                spans[(trace, span_id)] = span
            del self._touched[trace]
            self._rooted.discard(trace)
        pairs, skipped = _map(spans, self.rejects)
        self.skipped += skipped
        return pairs


def _map(spans: dict[Key, Span], rejects: list[Reject]) -> tuple[list[tuple[int, Event]], int]:
    """The records of whole traces, each with its span's line, sorted; and the spans skipped.

    The spans of a loop of parent links are taken out of ``spans`` and added
    to ``rejects``; the other spans are mapped as if those were missing.
    """
    _refuse_loops(spans, rejects)
    index = SpanIndex(spans)
    steps = Steps(index)
    pairs: list[tuple[int, Event]] = []
    skipped = 0
    failed_tools: dict[Key, Node] = {}  # each agent's last failed tool call
    for key, span in spans.items():
        if key in index.agent_set or key in index.consumed:
            continue
        run = index.run_of(key)
        if run is None:
            skipped += 1
            continue
        node = steps.node(key, span, run)
        if node is not None:
            pairs.append((span.line, node))
            owner = index.otel.get(key)
            if node.call == "tool" and node.error is not None and owner is not None:
                last = failed_tools.get(owner)
                if last is None or node.ts >= last.ts:
                    failed_tools[owner] = node
    errors = agent_errors(index, failed_tools)
    sessions = _sessions(index)
    for key in index.agents:
        line = spans[key].line
        records = _agent_records(index, key, errors, steps.usage.get(key), sessions)
        pairs.extend((line, event) for event in records)
    pairs.sort(key=lambda pair: event_sort_key(pair[1]))
    return pairs, skipped


def _refuse_loops(spans: dict[Key, Span], rejects: list[Reject]) -> None:
    """Move the spans of each loop of parent links from ``spans`` to ``rejects``."""
    for loop in parent_loops(spans):
        ids = [key[1] for key in loop]
        circle = " -> ".join([*ids, ids[0]])
        for key in loop:
            span = spans.pop(key)
            text = msgspec.json.encode(
                {"traceId": span.trace, "spanId": span.id, "parentSpanId": span.parent}
            ).decode()
            rejects.append((span.line, text, f"span {span.id}: its parent links loop ({circle})"))


def _status(index: SpanIndex, key: tuple[str, str], error: ErrorInfo | None) -> Status:
    written = index.spans[key].attrs.get("tracekit.status")
    if written in _STATUSES:
        return cast(Status, written)
    if error is None:
        return "ok"
    if error.code in _CANCELLED:
        return "cancelled"
    if error.code in REFUSALS and key not in index.has_children:
        return "refused"  # a refused call never ran: its span has nothing under it
    return "error"


def _agent_records(
    index: SpanIndex,
    key: tuple[str, str],
    errors: dict[tuple[str, str], ErrorInfo],
    usage: Usage | None,
    sessions: dict[str, str],
) -> list[Event]:
    span = index.spans[key]
    error = errors.get(key)
    attrs = span.attrs
    common: dict[str, Any] = {"service": span.service, "traceId": span.trace or None}
    run_id = index.run_id(key)
    agent = index.agent_name(span)
    status = _status(index, key, error)
    start = span.start / _NS_PER_MS
    duration = (span.end - span.start) / _NS_PER_MS if span.end is not None else None
    if index.is_root(key):
        session = session_of(span) or sessions.get(key[0])
        records: list[Event] = [
            RunStart(ts=start, runId=run_id, agent=agent, session=session, **common)
        ]
        if span.end is not None:
            written = attrs.get("tracekit.failure")
            failure = cast(_Failure, written) if written in _FAILURES else failure_of(error)
            records.append(
                RunEnd(
                    ts=span.end / _NS_PER_MS,
                    runId=run_id,
                    ok=status == "ok",
                    durationMs=duration,
                    failure=failure,
                    error=error,
                    usage=usage,  # the root agent's own model calls count in the run's total
                    **common,
                )
            )
        return records
    node = index.node_of(key)
    written_kind = attrs.get("tracekit.kind")
    edge = index.edges[key]
    if written_kind in _KINDS:
        kind = cast(Kind, written_kind)
    elif "tracekit.node" in attrs:
        kind = _kind_of(node)
    else:
        kind = edge.kind
    ids: dict[str, Any] = {
        "invocationId": str(attrs.get("tracekit.invocation_id") or span.id),
        "runId": run_id,
        "parentRunId": index.parent_run_id(key),
        "agent": agent,
        "node": node,
    }
    found = None if edge.source == OTEL else EdgeInfo(source=edge.source)
    records = [Enter(ts=start, kind=kind, edge=found, **ids, **common)]
    if span.end is not None:
        records.append(
            Exit(
                ts=span.end / _NS_PER_MS,
                ok=status == "ok",
                durationMs=duration,
                status=status,
                error=error,
                usage=usage,
                **ids,
                **common,
            )
        )
    return records


def _sessions(index: SpanIndex) -> dict[str, str]:
    """Each trace's conversation: on the first agent span of it that names one."""
    found: dict[str, str] = {}
    for key in index.agents:
        if key[0] not in found:
            session = session_of(index.spans[key])
            if session is not None:
                found[key[0]] = session
    return found


def _kind_of(node: str | None) -> Kind:
    """lovia's tool names tell a handoff (``transfer_to_*``) and a spawn from a delegation."""
    if node is None:
        return "delegate"
    if node.startswith(("transfer_to_", "handoff")):
        return "handoff"
    if node.startswith("spawn"):
        return "subagent"
    return "delegate"
