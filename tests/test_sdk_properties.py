"""Invariants over random delegation trees (hypothesis, bounded)."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.events import Enter, Exit, Node, RunEnd
from tracekit.sdk import AgentTracer, MemorySink


@dataclass
class Call:
    agent: str
    fails: bool
    children: list[Call] = field(default_factory=list)


calls = st.recursive(
    st.builds(Call, st.sampled_from(["sql", "docs", "billing"]), st.booleans(), st.just([])),
    lambda kids: st.builds(
        Call, st.sampled_from(["sql", "docs", "billing"]), st.booleans(), st.lists(kids, max_size=3)
    ),
    max_leaves=12,
)


class Boom(Exception):
    pass


def _play(tk: AgentTracer, call: Call, seen: list[tuple[Call, str, str]]) -> None:
    with tk.delegate(call.agent, node="delegate") as inv:
        seen.append((call, inv.run_id, inv.parent_run_id or ""))
        with tk.step("think"):
            pass
        for child in call.children:
            with suppress(Boom):  # the caller handles its child's failure
                _play(tk, child, seen)
        if call.fails:
            raise Boom(call.agent)


@settings(max_examples=60, deadline=None)
@given(st.lists(calls, min_size=1, max_size=3))
def test_records_mirror_the_calls(top: list[Call]) -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    seen: list[tuple[Call, str, str]] = []
    with tk.run("root") as run:
        for call in top:
            try:
                _play(tk, call, seen)
            except Boom as exc:
                assert str(exc) == call.agent  # the agent's own exception, unchanged
    events = sink.events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    enters = {e.runId: e for e in events if isinstance(e, Enter)}
    exits = {e.runId: e for e in events if isinstance(e, Exit)}
    assert set(enters) == set(exits) == {run_id for _, run_id, _ in seen}
    parent_of = {id(c): run_id for c, run_id, _ in seen}
    for call, run_id, parent in seen:
        assert enters[run_id].parentRunId == parent
        assert exits[run_id].status == ("error" if call.fails else "ok")
        for child in call.children:
            assert enters[parent_of[id(child)]].parentRunId == run_id
    for call in top:
        assert enters[parent_of[id(call)]].parentRunId == run.run_id
    nodes = [e for e in events if isinstance(e, Node)]
    assert len(nodes) == len(seen) and {n.runId for n in nodes} == set(enters)
    assert isinstance(events[-1], RunEnd) and events[-1].ok
