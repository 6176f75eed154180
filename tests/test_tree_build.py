"""agent_tree / build_forest: the seed's meaning, and what real traces do."""

from __future__ import annotations

import random

import msgspec
import pytest
from _tree_helpers import call, enter, exit_, node

from tracekit import (
    AgentStep,
    NodeStep,
    agent_tree,
    agents_in,
    build_forest,
    describe_agent_tree,
    describe_forest,
)
from tracekit.events import ErrorInfo, RunEnd, RunStart
from tracekit.tree import iter_steps
from tracekit.tree.model import steps_to_json


def seed_events() -> list:
    return [
        node(1, "r", "list_desks"),
        node(2, "r", "decide"),
        enter(3, "i1", "r/sql", "r", "sql"),
        node(4, "r/sql", "delegate/sql/write_query"),
        node(5, "r/sql", "delegate/sql/run_query"),
        node(6, "r/sql", "delegate/sql/say"),
        exit_(14, "i1", "r/sql", "r", "sql", 11),
        node(15, "r", "reply"),
    ]


SEED_TEXT = (
    "list_desks\ndecide\ndelegate -> sql (ok, 11ms)\n  write_query\n  run_query\n  say\nreply"
)


def test_the_seed_tree() -> None:
    tree = agent_tree(seed_events())
    assert describe_agent_tree(tree) == SEED_TEXT
    assert str(tree) == SEED_TEXT
    step = tree[2]
    assert isinstance(step, AgentStep)
    assert (step.type, step.agent, step.node, step.runId, step.parentRunId) == (
        "agent",
        "sql",
        "delegate",
        "r/sql",
        "r",
    )
    assert (step.ok, step.status, step.durationMs, step.error) == (True, "ok", 11, None)
    assert [s.id for s in step.steps if isinstance(s, NodeStep)] == [
        "write_query",
        "run_query",
        "say",
    ]


def test_step_json_is_the_seed_shape_with_camel_case_keys() -> None:
    data = msgspec.json.decode(steps_to_json(agent_tree(seed_events())))
    assert data[0] == {"type": "node", "id": "list_desks"}
    agent = data[2]
    assert list(agent)[:10] == [
        "type",
        "agent",
        "node",
        "kind",
        "runId",
        "parentRunId",
        "invocationId",
        "ok",
        "status",
        "durationMs",
    ]
    assert "error" not in agent  # absent when ok
    assert list(agent)[-1] == "steps"


def test_error_is_in_the_json_when_not_ok() -> None:
    events = [
        enter(1, "i", "c", "r", "refunds", node="escalate"),
        exit_(6, "i", "c", "r", "refunds", 5, node="escalate", status="error",
              error=ErrorInfo(code="AGENT_FAILED", cause=ErrorInfo(code="TIMEOUT"))),
    ]  # fmt: skip
    data = msgspec.json.decode(steps_to_json(agent_tree(events)))
    assert data[0]["error"] == {"code": "AGENT_FAILED", "cause": {"code": "TIMEOUT"}}
    assert (data[0]["ok"], data[0]["status"]) == (False, "error")


def test_events_out_of_order_give_the_same_tree() -> None:
    events = seed_events()
    shuffled = events[:]
    random.Random(7).shuffle(shuffled)
    assert describe_agent_tree(agent_tree(shuffled)) == SEED_TEXT


def test_ties_in_ts_are_ordered_by_seq_then_by_line() -> None:
    by_seq = [node(5, "r", "second", seq=2), node(5, "r", "first", seq=1)]
    assert describe_agent_tree(agent_tree(by_seq)) == "first\nsecond"
    by_line = [node(5, "r", "first"), node(5, "r", "second")]
    assert describe_agent_tree(agent_tree(by_line)) == "first\nsecond"


def test_ties_out_of_seq_order_after_a_copy_are_sorted() -> None:
    # The fold checks the order as it goes; a copy between the ties must not hide a step back.
    events = [node(5, "r", "b", seq=2), node(5, "r", "b", seq=2), node(5, "r", "a", seq=1)]
    forest = build_forest(events)
    assert describe_agent_tree(forest.runs[0].steps) == "a\nb"
    assert forest.integrity.duplicates == 1


@pytest.mark.parametrize("odd", [float("-inf"), float("nan"), float("inf")])
def test_odd_times_sort_as_python_sorts_them(odd: float) -> None:
    events = [node(odd, "r", "odd"), node(1, "r", "x"), node(odd, "r", "again"), node(2, "r", "y")]
    expected = sorted(events, key=lambda e: e.ts)  # what a sort of the whole trace gives
    names = [step.id for step in build_forest(events).runs[0].steps]
    assert names == [e.id for e in expected]


def test_enter_without_exit_is_running() -> None:
    events = [node(1, "r", "decide"), enter(2, "i", "r/sql", "r", "sql")]
    forest = build_forest(events)
    assert describe_agent_tree(forest.runs[0].steps) == "decide\ndelegate -> sql (running)"
    step = forest.runs[0].steps[1]
    assert isinstance(step, AgentStep) and step.ok is None and step.durationMs is None
    assert forest.integrity.entersWithoutExit == ["i"]


def test_exit_without_enter_is_kept_at_its_start_and_marked() -> None:
    events = [
        node(1, "r", "decide"),
        node(20, "r", "reply"),
        exit_(15, "i", "r/sql", "r", "sql", 10),  # started at 5, between the two
    ]
    forest = build_forest(events)
    text = describe_agent_tree(forest.runs[0].steps)
    assert text == "decide\ndelegate -> sql (ok, 10ms) [exit without enter]\nreply"
    assert forest.integrity.exitsWithoutEnter == ["i"]


def test_exit_before_its_enter_in_time_is_still_matched() -> None:
    events = [enter(5, "i", "c", "r", "sql"), exit_(4, "i", "c", "r", "sql", 1), node(1, "r", "a")]
    forest = build_forest(events)
    assert describe_agent_tree(forest.runs[0].steps) == "a\ndelegate -> sql (ok, 1ms)"
    assert forest.integrity.clean


def test_two_root_runs_give_one_tree_each_with_a_header() -> None:
    events = [
        RunStart(ts=0, runId="a", agent="front"),
        node(1, "a", "decide"),
        RunEnd(ts=40, runId="a", ok=True, durationMs=40),
        RunStart(ts=2, runId="b", agent="back"),
        node(3, "b", "work"),
        RunEnd(ts=9, runId="b", ok=False, durationMs=7, failure="agent",
               error=ErrorInfo(code="AGENT_FAILED")),
    ]  # fmt: skip
    forest = build_forest(events)
    assert [(r.runId, r.agent, r.status) for r in forest.runs] == [
        ("a", "front", "ok"),
        ("b", "back", "error"),
    ]
    assert describe_forest(forest) == (
        "run a: front (ok, 40ms)\n  decide\n\n"
        "run b: back (error AGENT_FAILED, 7ms, failure: agent)\n  work"
    )


def test_orphan_is_shown_under_its_own_header() -> None:
    events = [node(1, "r", "decide"), *call(2, 5, "i", "c", "missing", "sql")]
    forest = build_forest(events)
    assert [(r.runId, r.kind) for r in forest.runs] == [("r", "root"), ("missing", "orphan")]
    assert forest.integrity.orphanRuns == ["missing"]
    text = describe_forest(forest)
    assert "orphans: run missing is not in this trace" in text
    assert "  delegate -> sql (ok, 3ms)" in text


def test_cycle_in_parent_links_is_reported_and_ends() -> None:
    events = [
        node(1, "root", "start"),
        *call(2, 9, "i1", "r1", "r2", "billing"),
        *call(3, 8, "i2", "r2", "r1", "orders"),
    ]
    forest = build_forest(events)
    assert forest.integrity.cycles == [["r1", "r2", "r1"]]
    invocations = [s.invocationId for s in agents_in([s for r in forest.runs for s in r.steps])]
    assert sorted(invocations) == ["i1", "i2"]  # each once, nothing dropped
    assert "cycle: " in describe_forest(forest)


def test_self_cycle_is_cut() -> None:
    forest = build_forest(call(1, 2, "i", "r", "r", "loop"))
    assert forest.integrity.cycles == [["r", "r"]]
    assert describe_agent_tree(forest.runs[0].steps) == "delegate -> loop (ok, 1ms) [cycle: r -> r]"


def test_a_chain_100000_deep_builds_prints_and_encodes() -> None:
    depth = 100_000
    events = [enter(i, f"i{i}", f"r{i + 1}", f"r{i}", "a") for i in range(depth)]
    events.append(node(depth, f"r{depth}", "bottom"))
    tree = agent_tree(events)
    text = describe_agent_tree(tree)
    lines = text.splitlines()
    assert len(lines) == depth + 1
    assert lines[100] == "  " * 100 + "delegate -> a (running)"
    assert lines[-1] == "  " * 100 + f"[depth {depth}] bottom"  # indentation stops growing
    data = steps_to_json(tree)
    assert data.count(b'"type":"agent"') == depth


def test_overlapping_subagents_are_ordered_by_start() -> None:
    events = [
        enter(10, "b", "rb", "r", "beta", node="spawn", kind="subagent"),
        enter(5, "a", "ra", "r", "alpha", node="spawn", kind="subagent"),
        exit_(30, "a", "ra", "r", "alpha", 25, node="spawn"),
        exit_(20, "b", "rb", "r", "beta", 10, node="spawn"),
        node(12, "ra", "spawn/alpha/search"),
        node(11, "rb", "spawn/beta/check"),
    ]
    text = describe_agent_tree(agent_tree(events))
    assert text == (
        "spawn -> alpha (subagent, ok, 25ms)\n  search\nspawn -> beta (subagent, ok, 10ms)\n  check"
    )
    assert [s.agent for s in agents_in(agent_tree(events))] == ["alpha", "beta"]


def test_the_same_event_twice_is_counted_once() -> None:
    events = seed_events()
    doubled = [*events, events[2], events[3], events[6]]
    forest = build_forest(doubled)
    assert describe_agent_tree(forest.runs[0].steps) == SEED_TEXT
    assert forest.integrity.duplicates == 3


def test_many_copies_in_one_millisecond_are_counted_once() -> None:
    events = [node(1, "r", f"n{i}") for i in range(100)] * 2
    forest = build_forest(events)
    assert len(forest.runs[0].steps) == 100
    assert forest.integrity.duplicates == 100


def test_same_invocation_id_with_other_content_is_a_conflict() -> None:
    events = [*call(1, 3, "i", "c", "r", "sql"), enter(2, "i", "c2", "r", "other")]
    forest = build_forest(events)
    assert forest.integrity.conflicts == ["i"]
    assert [s.agent for s in agents_in(forest.runs[0].steps)] == ["sql"]


def test_names_with_control_characters_are_escaped() -> None:
    events = call(1, 2, "i", "c", "r", "evil\x1b[2J\x07name")
    text = describe_agent_tree(agent_tree(events))
    assert "\x1b" not in text and "\x07" not in text
    assert "evil\\x1b[2J\\x07name" in text


def test_node_paths_show_their_last_part_under_the_run_named_by_run_id() -> None:
    events = [
        enter(1, "i", "child", "r", "sql"),
        node(2, "r", "delegate/sql/write_query"),  # named like the child's step, but in r
        node(3, "child", "delegate/sql/say"),
        exit_(4, "i", "child", "r", "sql", 3),
    ]
    assert describe_agent_tree(agent_tree(events)) == (
        "delegate -> sql (ok, 3ms)\n  say\nwrite_query"
    )


def test_pending_then_resumed_invocation_keeps_its_id() -> None:
    events = [
        node(0, "r", "ask"),
        enter(1, "i", "c", "r", "tickets"),
        exit_(2, "i", "c", "r", "tickets", 1, status="pending"),
        enter(10, "i", "c", "r", "tickets"),
        exit_(15, "i", "c", "r", "tickets", 5),
    ]
    forest = build_forest(events)
    assert describe_agent_tree(forest.runs[0].steps) == "ask\ndelegate -> tickets (ok, 5ms)"
    assert forest.integrity.clean


def test_two_invocations_claiming_one_run() -> None:
    events = [
        *call(1, 2, "i1", "c", "r", "a"),
        *call(3, 4, "i2", "c", "r", "b"),
        node(1.5, "c", "x"),
    ]
    forest = build_forest(events)
    assert forest.integrity.sharedRuns == ["c"]
    assert describe_agent_tree(forest.runs[0].steps) == (
        "delegate -> a (ok, 1ms)\n  x\ndelegate -> b (ok, 1ms) [run c is shown under an earlier invocation]"
    )


def test_agent_tree_of_a_child_run_is_its_subtree() -> None:
    tree = agent_tree(seed_events(), run_id="r/sql")
    assert describe_agent_tree(tree) == "write_query\nrun_query\nsay"
    assert agent_tree(seed_events(), run_id="nope") == []


def test_parentless_invocation_is_its_own_tree() -> None:
    forest = build_forest(call(1, 3, "i", "c", None, "triage"))
    assert [(r.runId, r.kind) for r in forest.runs] == [(None, "parentless")]


def test_agents_in_lists_each_invocation_once_in_start_order() -> None:
    events = [
        *call(1, 20, "outer", "c1", "r", "a"),
        *call(5, 6, "inner", "c2", "c1", "b"),
        *call(3, 4, "second", "c3", "r", "c"),
    ]
    assert [s.invocationId for s in agents_in(agent_tree(events))] == ["outer", "second", "inner"]


def test_iter_steps_is_pre_order() -> None:
    ids = [
        s.id if isinstance(s, NodeStep) else s.agent
        for s in iter_steps([agent_tree(seed_events())])
    ]
    assert ids == ["list_desks", "decide", "sql", "write_query", "run_query", "say", "reply"]


@pytest.mark.parametrize("events", [[], [RunEnd(ts=1, runId="r", ok=True)]])
def test_empty_or_bare_traces(events: list) -> None:
    forest = build_forest(events)
    assert describe_agent_tree(agent_tree(events)) == ""
    assert len(forest.runs) == len(events)
