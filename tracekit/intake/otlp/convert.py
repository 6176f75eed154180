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
from tracekit.intake.assemble import TraceAssembler
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.decode_json import Span, check_span, decode_spans
from tracekit.intake.otlp.decode_json_fast import decode_spans_fast
from tracekit.intake.otlp.edges import OTEL
from tracekit.intake.otlp.errors import CANCELLED_CODES, agent_errors
from tracekit.intake.otlp.handoff import kind_of_name
from tracekit.intake.otlp.kinds import session_of
from tracekit.intake.otlp.spans import Key, SpanIndex, parent_loops
from tracekit.intake.otlp.steps import Steps, own_error
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
#: Traces remembered after they are mapped, so that a late span joins its trace.
_REMEMBER: Final = 1024
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

    def __init__(self, assembler: TraceAssembler | None = None) -> None:
        #: The group-by-trace policy; a file's ticks are documents read.
        self.assembler = TraceAssembler(remember=_REMEMBER) if assembler is None else assembler
        self._docs = 0
        self.skipped = 0  # spans outside any agent run, among those mapped so far
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

    def feed_spans(self, spans: list[Span], *, line: int = 0, now: float | None = None) -> int:
        """Take spans decoded elsewhere (OTLP protobuf, a collector's spool); returns how many.

        Args:
            spans: the spans.
            line: where they came from (a line, a spool offset).
            now: the assembler's tick (a collector's clock); documents fed by default.

        Raises:
            ValueError: a span's times are out of range; then none of them is kept.
        """
        self._keep(spans, line, now)
        return len(spans)

    def take(self, traces: list[str]) -> list[tuple[int, Event]]:
        """Map and let go of the given traces (those held; others are ignored).

        For a caller that decides itself when a trace is complete (a live
        collector goes by time, not by documents).

        Returns:
            ``(line, record)`` pairs, as :meth:`finish_lines`.
        """
        return self._take(traces)

    def take_ready(self, now: float, *, final: bool = False) -> list[tuple[int, Event]]:
        """Map and let go of the traces the assembler finds complete at ``now``.

        With ``final`` the traces that have their root are mapped and the rest
        stay held: a collector that stops keeps them for its next start.
        """
        return self._take(self.assembler.ready(now=now, final=final, incomplete=False))

    def _keep(self, spans: list[Span], line: int, now: float | None = None) -> None:
        for span in spans:  # all checked before any is kept: a bad line is refused whole
            check_span(span)
        self._docs += 1
        self.assembler.add(spans, position=line, now=self._docs if now is None else now)

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
        late = self.assembler.take_late(traces)
        spans = self.assembler.take(traces)
        counts = SpanCounts()
        pairs = _map(spans, self.rejects, counts, len(traces))
        self.counts.add(counts)
        self.skipped += counts.outside
        return self._without_given(pairs, late) if late else pairs

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
        given = {_event_key(event) for _, event in _map(dict(late), [], before, traces)}
        self.counts.add(before, -1)
        self.skipped -= before.outside
        return [(line, event) for line, event in pairs if _event_key(event) not in given]


def _map(
    spans: dict[Key, Span], rejects: list[Reject], counts: SpanCounts, traces: int
) -> list[tuple[int, Event]]:
    """The records of whole traces with their spans' lines, sorted; ``counts`` says where spans went.

    The spans of a loop of parent links are taken out of ``spans`` and added
    to ``rejects``; the other spans are mapped as if those were missing. A
    trace with no agent span is a run of its own, its top span the root.
    """
    counts.refused += _refuse_loops(spans, rejects)
    index = SpanIndex(spans)
    if len({key[0] for key in index.agent_set}) < traces and _plain_roots(spans, index):
        index = SpanIndex(spans)
    steps = Steps(index)
    pairs: list[tuple[int, Event]] = []
    failed_tools: dict[Key, Node] = {}  # each agent's last failed tool call
    made: dict[Key, int] = {}  # step span -> its record's place in pairs
    hidden: list[Key] = []  # folded spans that may have failed
    counts.agents += len(index.agent_set)
    counts.steps += len(index.consumed)
    for key, span in spans.items():
        if key in index.agent_set or key in index.consumed:
            continue
        run = index.run_of(key)
        if run is None:
            counts.outside += 1
            continue
        node = steps.node(key, span, run)
        if node is None:
            counts.wrappers += 1
            if span.error or span.exception is not None:
                hidden.append(key)
        else:
            counts.steps += 1
            made[key] = len(pairs)
            pairs.append((span.line, node))
            owner = index.otel.get(key)
            if node.call == "tool" and node.error is not None and owner is not None:
                last = failed_tools.get(owner)
                if last is None or node.ts >= last.ts:
                    failed_tools[owner] = node
    if hidden:
        _surface_errors(index, hidden, made, pairs)
    errors = agent_errors(index, failed_tools)
    sessions = _sessions(index)
    for key in index.agents:
        line = spans[key].line
        records = _agent_records(index, key, errors, steps.usage.get(key), sessions)
        pairs.extend((line, event) for event in records)
    pairs.sort(key=lambda pair: event_sort_key(pair[1]))
    return pairs


def _surface_errors(
    index: SpanIndex, hidden: list[Key], made: dict[Key, int], pairs: list[tuple[int, Event]]
) -> None:
    """A failed span folded into a step fails that step: an error never vanishes.

    The step keeps its own error if it has one; otherwise it takes the first
    failure folded into it (a tool call that raised inside a delegation tool,
    a query that failed inside a plain step).
    """
    for key in hidden:
        error = own_error(index.spans[key])
        above = index.parent_of(key)
        while error is not None and above is not None and above not in made:
            above = None if above in index.agent_set else index.parent_of(above)
        if error is None or above is None:
            continue
        line, node = pairs[made[above]]
        if isinstance(node, Node) and node.ok is not False:
            failed = node.call is not None  # a plain step carries no error of its own
            pairs[made[above]] = (
                line,
                msgspec.structs.replace(node, ok=False, error=error if failed else None),
            )


def _plain_roots(spans: dict[Key, Span], index: SpanIndex) -> bool:
    """Make the top span of each trace without an agent span a root run; whether any was.

    Such a trace (a framework tracekit has no shape for, plain OpenTelemetry)
    is still a run, named after its top span's service and name, with its
    spans as steps: nothing read is dropped for want of an agent.
    """
    with_agents = {key[0] for key in index.agent_set}
    # A message runtime's own traces (AutoGen's publish/process) carry no agent but
    # are linked to those that do: they are the plumbing of those runs, not runs.
    linked = _linked_traces(spans) if with_agents else set()
    found = False
    for key, span in spans.items():
        if key[0] in with_agents or key[0] in linked:
            continue
        if span.parent and (key[0], span.parent) in spans:
            continue
        name = f"{span.service} {span.name}" if span.service else span.name
        span.attrs = {**span.attrs, "tracekit.root": True, "gen_ai.agent.name": name or span.id}
        found = True
    return found


def _linked_traces(spans: dict[Key, Span]) -> set[str]:
    """The traces that a span link joins to another trace (either end)."""
    linked: set[str] = set()
    for span in spans.values():
        for trace, _ in span.links:
            if trace != span.trace:
                linked.update((trace, span.trace))
    return linked


def _event_key(event: Event) -> tuple[Any, ...]:
    """A record's identity, as the store's ``event_key`` has it."""
    if isinstance(event, (Enter, Exit)):
        return (type(event).__name__, event.runId, event.invocationId)
    if isinstance(event, Node):
        return ("node", event.runId, event.id, event.ts, event.seq)
    return (type(event).__name__, event.runId)


def _refuse_loops(spans: dict[Key, Span], rejects: list[Reject]) -> int:
    """Move the spans of each loop of parent links from ``spans`` to ``rejects``; how many."""
    refused = 0
    for loop in parent_loops(spans):
        refused += len(loop)
        ids = [key[1] for key in loop]
        circle = " -> ".join([*ids, ids[0]])
        for key in loop:
            span = spans.pop(key)
            text = msgspec.json.encode(
                {"traceId": span.trace, "spanId": span.id, "parentSpanId": span.parent}
            ).decode()
            rejects.append((span.line, text, f"span {span.id}: its parent links loop ({circle})"))
    return refused


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
    return "delegate" if node is None else kind_of_name(node)
