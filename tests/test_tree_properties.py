"""Invariants of the tree for generated streams (hypothesis, bounded)."""

from __future__ import annotations

import random
import re
from collections import defaultdict

from _tree_helpers import enter, exit_, node
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit import agents_in, build_forest, describe_agent_tree, describe_forest
from tracekit.events import Enter, ErrorInfo, Event, Exit, Node
from tracekit.tree.forest import forest_to_json
from tracekit.tree.model import steps_to_json
from tracekit.tree.text import describe_integrity

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STATUSES = st.sampled_from(["ok", "error", "refused", "cancelled", "pending"])


@st.composite
def well_formed(draw: st.DrawFn) -> tuple[list[Event], int]:
    """A root run "r" with nested invocations, emitted as a runtime would."""
    count = draw(st.integers(0, 10))
    parents = [draw(st.integers(-1, k - 1)) for k in range(count)]
    children: dict[int, list[int]] = defaultdict(list)
    for k, parent in enumerate(parents):
        children[parent].append(k)
    events: list[Event] = []
    clock = [0.0]

    def tick() -> float:
        clock[0] += draw(st.sampled_from([0, 0, 1, 2.5]))  # ties are common
        return clock[0]

    def run(index: int) -> None:
        run_id = "r" if index < 0 else f"c{index}"
        for child in children[index]:
            for _ in range(draw(st.integers(0, 2))):
                events.append(node(tick(), run_id, f"{run_id}/step", seq=len(events)))
            start = tick()
            events.append(
                enter(start, f"i{child}", f"c{child}", run_id, f"a{child}", seq=len(events))
            )
            run(child)
            if draw(st.booleans()) or child == 0:
                end = tick()
                events.append(exit_(end, f"i{child}", f"c{child}", run_id, f"a{child}", end - start,
                                    status=draw(STATUSES), seq=len(events)))  # fmt: skip
        events.append(node(tick(), run_id, "last", seq=len(events)))

    run(-1)
    return events, count


@SETTINGS
@given(well_formed(), st.randoms(use_true_random=False))
def test_shuffling_the_lines_gives_the_same_tree(stream: tuple, rng: random.Random) -> None:
    events, _ = stream
    shuffled = events[:]
    rng.shuffle(shuffled)
    a, b = build_forest(events), build_forest(shuffled)
    assert forest_to_json(a) == forest_to_json(b)
    assert describe_forest(a) == describe_forest(b)


@SETTINGS
@given(well_formed())
def test_every_invocation_appears_once_in_start_order(stream: tuple) -> None:
    events, count = stream
    forest = build_forest(events)
    assert len(forest.runs) == 1 and forest.runs[0].runId == "r"
    found = agents_in(forest.runs[0].steps)
    assert sorted(s.invocationId for s in found) == sorted(f"i{k}" for k in range(count))
    starts = [s.startTs for s in found]
    assert starts == sorted(starts)  # type: ignore[type-var]
    text = describe_agent_tree(forest.runs[0].steps)
    assert sum(" -> " in line for line in text.splitlines()) == count


@SETTINGS
@given(well_formed())
def test_copies_of_records_change_nothing_but_the_count(stream: tuple) -> None:
    events, _ = stream
    doubled = events + events[: len(events) // 2]
    a, b = build_forest(events), build_forest(doubled)
    assert steps_to_json(a.runs[0].steps) == steps_to_json(b.runs[0].steps)
    assert b.integrity.duplicates == len(events) // 2


NAMES = st.sampled_from(["r", "a", "b", "c", None]) | st.text(max_size=4)
IDS = st.sampled_from(["i1", "i2", "i3"])
TS = st.floats(min_value=0, max_value=20, allow_nan=False)
ERRORS = st.none() | st.builds(
    ErrorInfo, code=st.text(max_size=5), chain=st.none() | st.lists(st.text(max_size=3), max_size=3)
)
ANY_EVENT = st.one_of(
    st.builds(Node, ts=TS, runId=NAMES.filter(bool), id=st.text(max_size=8),
              ok=st.none() | st.booleans()),
    st.builds(Enter, ts=TS, invocationId=IDS, runId=NAMES.filter(bool), parentRunId=NAMES,
              agent=st.text(max_size=6), node=st.none() | st.text(max_size=6),
              kind=st.sampled_from(["delegate", "handoff", "subagent"])),
    st.builds(Exit, ts=TS, invocationId=IDS, runId=NAMES.filter(bool), parentRunId=NAMES,
              agent=st.text(max_size=6), status=st.none() | STATUSES, error=ERRORS,
              durationMs=st.none() | st.floats(min_value=0, max_value=50)),
)  # fmt: skip


@SETTINGS
@given(st.lists(ANY_EVENT, max_size=25))
def test_describe_never_raises_whatever_the_input(events: list[Event]) -> None:
    forest = build_forest(events)
    text = describe_forest(forest, color=True)
    describe_forest(forest, errors_only=True, max_depth=1)
    forest_to_json(forest)
    describe_integrity(forest.integrity)
    # names are data: no raw control character reaches the terminal but our colours
    plain = re.sub(r"\x1b\[(?:3[0-9]|0|1)m", "", text)
    assert not any(ch in plain for ch in "\x1b\x07\x00\x9b")
    enters = {e.invocationId for e in events if isinstance(e, Enter)}
    exits = {e.invocationId for e in events if isinstance(e, Exit)}
    shown = [s.invocationId for r in forest.runs for s in agents_in(r.steps)]
    assert set(shown) == enters | exits  # nothing dropped
