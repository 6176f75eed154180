"""Whole traces to records, every span counted once (tracekit.intake.otlp.mapping)."""

from __future__ import annotations

from typing import Any

from tracekit.events import Node, RunStart
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.mapping import Reject, map_traces
from tracekit.intake.otlp.spans import Key

MS = 1_000_000


def _span(
    sid: str,
    parent: str,
    name: str,
    start: int,
    trace: str = "t",
    error: bool = False,
    **attrs: Any,
) -> Span:
    return Span(trace, sid, parent, name, start * MS, (start + 1) * MS, attrs, error, "", "desk")


def _spans(*spans: Span) -> dict[Key, Span]:
    return {(s.trace, s.id): s for s in spans}


def _agent(sid: str, parent: str, name: str, start: int) -> Span:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    return _span(sid, parent, f"invoke_agent {name}", start, **attrs)


def test_every_span_is_an_agent_a_step_a_wrapper_or_a_reject() -> None:
    spans = _spans(
        _agent("a", "", "triage", 1),
        _span("b", "a", "turn", 2),  # a wrapper: its model call is the agent's
        _span("c", "b", "chat", 3, **{"gen_ai.operation.name": "chat"}),
        _span("d", "a", "classify", 4),
        _span("e", "zz", "orphan", 5, trace="u"),  # its own trace: a plain root run
    )
    counts = SpanCounts()
    pairs = map_traces(spans, [], counts, 2)
    assert (counts.agents, counts.steps, counts.wrappers, counts.rejected) == (2, 2, 1, 0)
    assert counts.read == len(spans)
    runs = [e for _, e in pairs if isinstance(e, RunStart)]
    assert sorted(r.agent for r in runs) == ["desk orphan", "triage"]


def test_a_loop_of_parent_links_is_refused_with_its_circle_and_the_rest_mapped() -> None:
    spans = _spans(
        _agent("a", "", "triage", 1),
        _span("x", "y", "one", 2),
        _span("y", "x", "two", 3),
    )
    rejects: list[Reject] = []
    counts = SpanCounts()
    pairs = map_traces(spans, rejects, counts, 1)
    assert counts.refused == 2 and counts.read == 3
    assert [reason for _, _, reason in rejects] == [
        "span x: its parent links loop (x -> y -> x)",
        "span y: its parent links loop (x -> y -> x)",
    ]
    assert [type(e).__name__ for _, e in pairs] == ["RunStart", "RunEnd"]


def test_a_failure_folded_into_a_plain_step_fails_it_without_an_error_of_its_own() -> None:
    spans = _spans(
        _agent("a", "", "triage", 1),
        _span("s", "a", "prepare", 2),
        _span("q", "s", "query", 3, error=True),
    )
    counts = SpanCounts()
    pairs = map_traces(spans, [], counts, 1)
    [step] = [e for _, e in pairs if isinstance(e, Node)]
    assert (step.id, step.ok, step.error) == ("prepare", False, None)
    assert (counts.steps, counts.wrappers) == (1, 1)


def test_a_linked_trace_without_agents_is_plumbing_not_a_run() -> None:
    plumbing = _span("p", "", "publish", 1, trace="u")
    plumbing.links = (("t", "a"),)
    spans = _spans(_agent("a", "", "triage", 2), plumbing)
    counts = SpanCounts()
    pairs = map_traces(spans, [], counts, 2)
    assert [e.agent for _, e in pairs if isinstance(e, RunStart)] == ["triage"]
    assert counts.outside == 1 and counts.read == 2
