"""An agent span's records: ``run.start``/``run.end`` for a root, ``enter``/``exit`` for a callee.

The span index (:mod:`tracekit.intake.otlp.spans`) says who called whom;
this module says what each agent span becomes: its status (``ok``,
``error``, ``refused``, ``cancelled``, or what tracekit's SDK wrote), the
kind of its edge, its usage and its conversation, and the order records
sort in (:func:`event_sort_key`: by time, a start before a step before an
end at one moment).

Example:
    >>> from tracekit.events import ErrorInfo
    >>> failure_of(ErrorInfo(code="AGENT_RECURSION")), failure_of(ErrorInfo(code="Boom"))
    ('delegation', 'agent')
"""

from __future__ import annotations

from typing import Any, Final, Literal, cast

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
from tracekit.intake.otlp.edges import OTEL
from tracekit.intake.otlp.errors import CANCELLED_CODES
from tracekit.intake.otlp.handoff import kind_of_name
from tracekit.intake.otlp.kinds import session_of
from tracekit.intake.otlp.spans import Key, SpanIndex

__all__ = ["REFUSALS", "agent_records", "event_sort_key", "failure_of", "pair_sort_key", "sessions"]

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


def pair_sort_key(pair: tuple[int, Event]) -> tuple[float, int, str, str]:
    """:func:`event_sort_key` of a ``(line, record)`` pair's record.

    The same order in one call a record rather than two: a big file's traces
    sort millions of pairs.

    Example:
        >>> pair_sort_key((7, RunStart(ts=5, runId="r", agent="a"))) == event_sort_key(
        ...     RunStart(ts=5, runId="r", agent="a"))
        True
    """
    event = pair[1]
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


def sessions(index: SpanIndex) -> dict[str, str]:
    """Each trace's conversation: on the first agent span of it that names one."""
    found: dict[str, str] = {}
    for key in index.agents:
        if key[0] not in found:
            session = session_of(index.spans[key])
            if session is not None:
                found[key[0]] = session
    return found


def agent_records(
    index: SpanIndex,
    key: Key,
    errors: dict[Key, ErrorInfo],
    usage: Usage | None,
    sessions: dict[str, str],
    stops: dict[Key, ErrorInfo] | None = None,
) -> list[Event]:
    """The records of one agent span: its run's start and end, or its invocation's enter and exit.

    A root in ``stops`` ended ok at a limit (:mod:`tracekit.intake.otlp.stops`):
    its ``run.end`` is ok and carries that limit as its error.
    """
    if index.is_root(key):
        stop = stops.get(key) if stops else None
        return _root_records(index, key, errors.get(key), usage, sessions, stop)
    return _callee_records(index, key, errors.get(key), usage)


def _root_records(
    index: SpanIndex,
    key: Key,
    error: ErrorInfo | None,
    usage: Usage | None,
    sessions: dict[str, str],
    stop: ErrorInfo | None = None,
) -> list[Event]:
    span = index.spans[key]
    common = _common(span.service, span.trace)
    run_id = index.run_id(key)
    session = session_of(span) or sessions.get(key[0])
    records: list[Event] = [
        RunStart(
            ts=span.start / _NS_PER_MS,
            runId=run_id,
            agent=index.agent_name(span),
            session=session,
            **common,
        )
    ]
    if span.end is not None:
        written = span.attrs.get("tracekit.failure")
        failure = cast(_Failure, written) if written in _FAILURES else failure_of(error)
        if stop is not None:  # it ended ok, at a limit
            failure = None
        records.append(
            RunEnd(
                ts=span.end / _NS_PER_MS,
                runId=run_id,
                ok=stop is not None or _status(index, key, error) == "ok",
                durationMs=(span.end - span.start) / _NS_PER_MS,
                failure=failure,
                error=stop or error,
                usage=usage,  # the root agent's own model calls count in the run's total
                **common,
            )
        )
    return records


def _callee_records(
    index: SpanIndex, key: Key, error: ErrorInfo | None, usage: Usage | None
) -> list[Event]:
    span = index.spans[key]
    attrs = span.attrs
    common = _common(span.service, span.trace)
    node = index.node_of(key)
    edge = index.edges[key]
    ids: dict[str, Any] = {
        "invocationId": str(attrs.get("tracekit.invocation_id") or span.id),
        "runId": index.run_id(key),
        "parentRunId": index.parent_run_id(key),
        "agent": index.agent_name(span),
        "node": node,
    }
    found = None if edge.source == OTEL else EdgeInfo(source=edge.source)
    records: list[Event] = [
        Enter(
            ts=span.start / _NS_PER_MS,
            kind=_kind(attrs, node, edge.kind),
            edge=found,
            **ids,
            **common,
        )
    ]
    if span.end is not None:
        status = _status(index, key, error)
        records.append(
            Exit(
                ts=span.end / _NS_PER_MS,
                ok=status == "ok",
                durationMs=(span.end - span.start) / _NS_PER_MS,
                status=status,
                error=error,
                usage=usage,
                **ids,
                **common,
            )
        )
    return records


def _common(service: str | None, trace: str) -> dict[str, Any]:
    return {"service": service, "traceId": trace or None}


def _kind(attrs: dict[str, Any], node: str | None, found: Kind) -> Kind:
    """The edge's kind: ``tracekit.kind``, else the node's name for the SDK's spans, else the edge's."""
    written = attrs.get("tracekit.kind")
    if written in _KINDS:
        return cast(Kind, written)
    if "tracekit.node" in attrs:
        # tool names tell a handoff (``transfer_to_*``) and a spawn from a delegation.
        return "delegate" if node is None else kind_of_name(node)
    return found


def _status(index: SpanIndex, key: Key, error: ErrorInfo | None) -> Status:
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
