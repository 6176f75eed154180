"""An agent span's records: status, kind and order (tracekit.intake.otlp.records)."""

from __future__ import annotations

from typing import Any

from tracekit.events import Enter, ErrorInfo, Exit, Node, RunEnd, RunStart
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.records import REFUSALS, agent_records, event_sort_key, failure_of
from tracekit.intake.otlp.spans import SpanIndex

MS = 1_000_000


def _span(sid: str, parent: str, name: str, start: int, end: int | None, **attrs: Any) -> Span:
    return Span(
        "t", sid, parent, name, start * MS, end * MS if end else None, attrs, False, "", "desk"
    )


def _agent(sid: str, parent: str, name: str, start: int, end: int | None, **attrs: Any) -> Span:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs}
    return _span(sid, parent, f"invoke_agent {name}", start, end, **attrs)


def _index(*spans: Span) -> SpanIndex:
    return SpanIndex({(s.trace, s.id): s for s in spans})


def test_at_one_moment_a_start_sorts_before_a_step_before_an_end() -> None:
    records = [
        RunEnd(ts=5, runId="r", ok=True),
        Exit(ts=5, invocationId="i", runId="c", parentRunId="r", agent="b", ok=True),
        Node(ts=5, runId="r", id="step"),
        Enter(ts=5, invocationId="i", runId="c", parentRunId="r", agent="b"),
        RunStart(ts=5, runId="r", agent="a"),
    ]
    ordered = sorted(records, key=event_sort_key)
    assert [type(e).__name__ for e in ordered] == ["RunStart", "Enter", "Node", "Exit", "RunEnd"]


def test_a_circle_is_a_delegation_failure_and_a_cancellation_none() -> None:
    assert failure_of(ErrorInfo(code="AGENT_RECURSION")) == "delegation"
    assert failure_of(ErrorInfo(code="KeyError")) == "agent"
    assert failure_of(ErrorInfo(code="CANCELLED")) is None
    assert failure_of(None) is None


def test_a_root_agent_gives_a_run_start_and_end_with_its_session() -> None:
    index = _index(_agent("a", "", "triage", 1, 9, **{"gen_ai.conversation.id": "s-1"}))
    start, end = agent_records(index, ("t", "a"), {}, None, {})
    assert isinstance(start, RunStart) and isinstance(end, RunEnd)
    assert (start.runId, start.agent, start.session, start.ts) == ("a", "triage", "s-1", 1.0)
    assert (end.ok, end.durationMs, end.failure) == (True, 8.0, None)


def test_a_refusal_with_nothing_under_it_is_refused_and_with_children_an_error() -> None:
    refused = ErrorInfo(code=sorted(REFUSALS)[0])
    spans = [
        _agent("a", "", "triage", 1, 9),
        _agent("b", "a", "billing", 2, 3),
        _agent("c", "a", "refunds", 4, 8),
        _span("d", "c", "lookup", 5, 6),
    ]
    index = _index(*spans)
    errors = {("t", "b"): refused, ("t", "c"): refused}
    _, exit_b = agent_records(index, ("t", "b"), errors, None, {})
    _, exit_c = agent_records(index, ("t", "c"), errors, None, {})
    assert isinstance(exit_b, Exit) and isinstance(exit_c, Exit)
    assert (exit_b.status, exit_c.status) == ("refused", "error")


def test_the_sdks_written_kind_and_node_win_over_the_edge() -> None:
    spans = [
        _agent("a", "", "triage", 1, 9),
        _agent("b", "a", "billing", 2, None, **{"tracekit.node": "transfer_to_billing"}),
        _agent("c", "a", "refunds", 3, None, **{"tracekit.kind": "subagent"}),
    ]
    index = _index(*spans)
    [enter_b] = agent_records(index, ("t", "b"), {}, None, {})
    [enter_c] = agent_records(index, ("t", "c"), {}, None, {})
    assert isinstance(enter_b, Enter) and isinstance(enter_c, Enter)
    assert (enter_b.kind, enter_b.node, enter_b.parentRunId) == (
        "handoff",
        "transfer_to_billing",
        "a",
    )
    assert enter_c.kind == "subagent"
