"""LlamaIndex AgentWorkflow: agents grouped from their turns (``shapes/llamaindex.py``, ``inputs.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracekit.intake.otlp.decode_json import Span, decode_spans
from tracekit.intake.otlp.inputs import CURRENT_AGENT, current_agent
from tracekit.intake.otlp.shapes.llamaindex import invocations
from tracekit.intake.otlp.spans import Key, SpanIndex

RECORDINGS = Path(__file__).parent / "frameworks" / "recordings" / "llama_index"


def spans_of(path: Path) -> dict[Key, Span]:
    found: dict[Key, Span] = {}
    for line in path.read_text().splitlines():
        found.update({(s.trace, s.id): s for s in decode_spans(json.loads(line))})
    return found


def turn(i: str, start: int, agent: str | None) -> Span:
    attrs = {CURRENT_AGENT: agent} if agent else {}
    name = "AgentWorkflow.setup_agent" if agent else "AgentWorkflow.call_tool"
    return Span("t", i, "w", name, start, start + 1, attrs, False, "", None)


def test_each_run_of_one_agents_turns_is_one_invocation_under_its_first_turn() -> None:
    steps = [turn("a1", 1, "triage"), turn("a2", 2, None), turn("a3", 3, "triage"),
             turn("b1", 4, "billing"), turn("b2", 5, None), turn("c1", 6, "triage")]  # fmt: skip
    spans = {("t", s.id): s for s in steps}
    heads = invocations(spans, [k for k, s in spans.items() if CURRENT_AGENT in s.attrs])
    assert sorted(heads) == [("t", "a1"), ("t", "b1"), ("t", "c1")]
    assert [(s.id, s.parent) for s in steps] == [
        ("a1", "w"), ("a2", "a1"), ("a3", "a1"), ("b1", "w"), ("b2", "b1"), ("c1", "w")
    ]  # fmt: skip
    assert spans[("t", "a1")].end == 4  # the invocation ends with its last turn's steps
    assert CURRENT_AGENT not in spans[("t", "a3")].attrs  # a later turn is only a step
    again = invocations(spans, [k for k, s in spans.items() if CURRENT_AGENT in s.attrs])
    assert sorted(again) == sorted(heads)  # a trace mapped again is unchanged
    assert [s.parent for s in steps] == ["w", "a1", "a1", "w", "b1", "w"]


@pytest.mark.parametrize("path", sorted(RECORDINGS.glob("*.otlp.json")), ids=lambda p: p.name)
def test_indexing_a_trace_twice_gives_the_same_agents_and_edges(path: Path) -> None:
    """The server may map a trace again when a late span arrives: the regrouping holds."""
    spans = spans_of(path)
    first = SpanIndex(spans)
    edges = {key: (edge.parent, edge.node, edge.kind) for key, edge in first.edges.items()}
    second = SpanIndex(spans)
    assert {key: (e.parent, e.node, e.kind) for key, e in second.edges.items()} == edges
    names = sorted(SpanIndex.agent_name(spans[key]) for key in second.agent_set)
    assert "triage" in names and len(second.workflows) == 1


def test_the_agent_is_read_from_a_turns_input_only() -> None:
    said = '{"ev": "AgentInput(input=[], current_agent_name=\\"O\'Brien\\")"}'
    assert current_agent("AgentWorkflow.setup_agent", said) == "O'Brien"
    assert current_agent("AgentWorkflow.run_agent_step", "current_agent_name='x'") is None
    assert current_agent("AgentWorkflow.setup_agent", None) is None
