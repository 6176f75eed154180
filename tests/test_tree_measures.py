"""Own time and token totals of each invocation (tracekit.tree.measures), in the tree and its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from _tree_helpers import call, enter, exit_, run_cli, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.events import EdgeInfo, Event, RunEnd, RunStart, Usage
from tracekit.tree import AgentStep, build_forest, iter_steps
from tracekit.tree.frame import invocations_frame
from tracekit.tree.measures import covered_ms, measure, own_time


def _by_agent(events: list[Event]) -> dict[str, AgentStep]:
    forest = build_forest(events)
    measure(r.steps for r in forest.runs)
    return {
        s.agent: s for s in iter_steps(r.steps for r in forest.runs) if isinstance(s, AgentStep)
    }


def test_overlapping_background_subagents_are_counted_once() -> None:
    # lead 0..100; a 10..40 and b 30..60 overlap (union 10..60), c 70..80.
    events: list[Event] = [
        RunStart(ts=0, runId="r", agent="front"),
        enter(0, "lead", "L", "r", "lead"),
        enter(10, "a", "A", "L", "a", kind="subagent"),
        enter(30, "b", "B", "L", "b", kind="subagent"),
        exit_(40, "a", "A", "L", "a", 30),
        exit_(60, "b", "B", "L", "b", 30),
        *call(70, 80, "c", "C", "L", "c"),
        exit_(100, "lead", "L", "r", "lead", 100),
        RunEnd(ts=101, runId="r", ok=True),
    ]
    steps = _by_agent(sorted(events, key=lambda e: e.ts))
    assert steps["lead"].ownMs == 100 - 50 - 10
    assert steps["a"].ownMs == 30 and steps["b"].ownMs == 30 and steps["c"].ownMs == 10


def test_nested_delegations_take_only_their_own_children() -> None:
    # top 0..100 calls mid 10..90, which calls leaf 20..80: each level subtracts its own child.
    events = [
        enter(0, "t", "T", "r", "top"),
        enter(10, "m", "M", "T", "mid"),
        *call(20, 80, "l", "L", "M", "leaf"),
        exit_(90, "m", "M", "T", "mid", 80),
        exit_(100, "t", "T", "r", "top", 100),
    ]
    steps = _by_agent(sorted(events, key=lambda e: e.ts))
    assert (steps["top"].ownMs, steps["mid"].ownMs, steps["leaf"].ownMs) == (20, 20, 60)


def test_a_child_that_outlives_its_parent_covers_only_up_to_the_parent_end() -> None:
    events = [
        enter(0, "p", "P", "r", "parent"),
        enter(40, "k", "K", "P", "spawned", kind="subagent"),
        exit_(50, "p", "P", "r", "parent", 50),
        exit_(200, "k", "K", "P", "spawned", 160),
    ]
    steps = _by_agent(events)
    assert steps["parent"].ownMs == 40  # 0..40 own, 40..50 covered
    assert steps["spawned"].ownMs == 160


def test_a_running_child_covers_to_the_parent_end_and_a_running_parent_has_no_own_time() -> None:
    events = [enter(0, "p", "P", "r", "parent"), enter(30, "k", "K", "P", "kid")]
    assert _by_agent(events)["parent"].ownMs is None
    events.append(exit_(60, "p", "P", "r", "parent", 60))
    steps = _by_agent(events)
    assert steps["parent"].ownMs == 30 and steps["kid"].ownMs is None


def test_tokens_roll_up_own_plus_children_at_every_node() -> None:
    events = [
        enter(0, "t", "T", "r", "top"),
        enter(1, "m", "M", "T", "mid"),
        *call(
            2, 3, "l1", "L1", "M", "leaf", usage=Usage(inputTokens=5, outputTokens=1, models=["x"])
        ),
        *call(4, 5, "l2", "L2", "M", "leaf", usage=Usage(inputTokens=7, models=["y"])),
        exit_(6, "m", "M", "T", "mid", 5, usage=Usage(inputTokens=100, outputTokens=10)),
        exit_(7, "t", "T", "r", "top", 7),  # no usage of its own
    ]
    steps = _by_agent(events)
    top, mid = steps["top"], steps["mid"]
    assert top.usage is None and top.totalUsage == Usage(
        inputTokens=112, outputTokens=11, models=["x", "y"]
    )
    assert mid.totalUsage is not None and mid.totalUsage.inputTokens == 112
    for step in steps.values():
        _assert_rolled_up(step)


def _assert_rolled_up(step: AgentStep) -> None:
    children = [s for s in step.steps if isinstance(s, AgentStep)]
    for side in ("inputTokens", "outputTokens"):
        parts = [getattr(step.usage, side, None)] + [
            getattr(c.totalUsage, side, None) for c in children
        ]
        known = [p for p in parts if p is not None]
        assert getattr(step.totalUsage, side, None) == (sum(known) if known else None)


@st.composite
def _random_tree(draw: st.DrawFn) -> list[Event]:
    """Invocations with random times (children may overlap or outlive) and random usage."""
    count = draw(st.integers(min_value=1, max_value=12))
    events: list[Event] = []
    runs = ["r"]
    for n in range(count):
        parent = draw(st.sampled_from(runs))
        start = draw(st.integers(min_value=0, max_value=500))
        length = draw(st.integers(min_value=0, max_value=300))
        tokens = draw(st.none() | st.integers(min_value=0, max_value=10_000))
        usage = Usage(inputTokens=tokens, outputTokens=tokens) if tokens is not None else None
        run = f"c{n}"
        events += [
            enter(start, f"i{n}", run, parent, f"a{n % 3}"),
            exit_(start + length, f"i{n}", run, parent, f"a{n % 3}", length, usage=usage),
        ]
        runs.append(run)
    return events


@settings(max_examples=150, deadline=None)
@given(events=_random_tree())
def test_own_time_is_between_zero_and_total_and_total_for_a_leaf(events: list[Event]) -> None:
    forest = build_forest(events)
    measure(r.steps for r in forest.runs)
    for step in iter_steps(r.steps for r in forest.runs):
        if not isinstance(step, AgentStep) or step.durationMs is None:
            continue
        assert step.ownMs is not None and 0 <= step.ownMs <= step.durationMs
        if not any(isinstance(s, AgentStep) for s in step.steps):
            assert step.ownMs == step.durationMs
        _assert_rolled_up(step)


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(-50, 150), st.integers(-50, 150)).map(sorted), max_size=8)
)
def test_covered_time_is_the_union_counted_millisecond_by_millisecond(
    spans: list[list[int]],
) -> None:
    inside = {ms for a, b in spans for ms in range(max(a, 0), min(b, 100))}
    assert covered_ms(0, 100, [(a, b) for a, b in spans]) == len(inside)


def test_a_plain_build_leaves_the_measures_to_measure() -> None:
    forest = build_forest(call(0, 10, "i", "c", "r", "solo", usage=Usage(inputTokens=1)))
    step = forest.runs[0].steps[0]
    assert isinstance(step, AgentStep) and step.ownMs is None and step.totalUsage is None
    measure(r.steps for r in forest.runs)
    assert step.ownMs == 10 and step.totalUsage == Usage(inputTokens=1)


def test_own_time_of_nothing_measured() -> None:
    assert own_time(None, None, None, []) is None
    assert own_time(0, 10, -5, []) == 0  # a negative reported duration is no own time


def test_tree_json_and_frame_carry_the_measures(tmp_path: Path) -> None:
    events: list[Event] = [
        RunStart(ts=0, runId="r", agent="front", session="s-1"),
        enter(0, "t", "T", "r", "top", edge=EdgeInfo(source="span.link")),
        *call(
            10, 30, "k", "K", "T", "kid", usage=Usage(inputTokens=4, outputTokens=2, models=["m"])
        ),
        exit_(40, "t", "T", "r", "top", 40, usage=Usage(inputTokens=1, outputTokens=1)),
        RunEnd(ts=41, runId="r", ok=True),
    ]
    path = write_jsonl(tmp_path / "t.jsonl", events)
    done = run_cli("tree", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    top = json.loads(done.stdout)["runs"][0]["steps"][0]
    assert top["edge"] == {"source": "span.link"}
    assert top["ownMs"] == 20.0 and top["durationMs"] == 40.0
    assert top["usage"] == {"inputTokens": 1, "outputTokens": 1}
    assert top["totalUsage"] == {"inputTokens": 5, "outputTokens": 3, "models": ["m"]}
    assert top["steps"][0]["ownMs"] == 20.0
    frame = invocations_frame(events).set_index("agent")
    assert frame.loc["top", "own_ms"] == 20.0 and frame.loc["top", "edge_source"] == "span.link"
    assert frame.loc["top", "total_input_tokens"] == 5 and frame.loc["kid", "models"] == ["m"]
    assert frame.loc["top", "models"] is None and pd.isna(frame.loc["kid", "edge_source"])
