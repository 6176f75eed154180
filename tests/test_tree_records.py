"""What the tree takes (records.py): typed records, dicts parsed from JSONL, mixed."""

from __future__ import annotations

import json

import pytest
from _tree_helpers import enter, exit_, node
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tree_properties import well_formed

from tracekit import InvalidRecordError, TracekitError, agent_tree, build_forest
from tracekit.events import Event, RunEnd, RunStart, encode_event
from tracekit.tree.forest import forest_to_json
from tracekit.tree.text import describe_agent_tree, describe_forest


def _seed() -> list[Event]:
    return [
        RunStart(ts=0, runId="r", agent="front_desk", session="conv-1"),
        node(1, "r", "decide"),
        enter(2, "i1", "r/sql", "r", "sql"),
        node(3, "r/sql", "delegate/sql/say"),
        exit_(13, "i1", "r/sql", "r", "sql", 11),
        RunEnd(ts=14, runId="r", ok=True, durationMs=14),
    ]


def _as_dicts(events: list[Event]) -> list[dict]:
    """Each record as ``JSON.parse`` of its line gives it."""
    return [json.loads(encode_event(e)) for e in events]


def test_dicts_parsed_from_jsonl_give_the_seed_tree() -> None:
    lines = [encode_event(e).decode() for e in _seed()]
    tree = agent_tree([json.loads(line) for line in lines])
    assert describe_agent_tree(tree) == "decide\ndelegate -> sql (ok, 11ms)\n  say"


def test_records_and_dicts_mix() -> None:
    events = _seed()
    mixed = [e if k % 2 else json.loads(encode_event(e)) for k, e in enumerate(events)]
    assert describe_agent_tree(agent_tree(mixed)) == describe_agent_tree(agent_tree(events))


def test_a_generator_of_dicts_is_taken() -> None:
    tree = agent_tree(d for d in _as_dicts(_seed()))
    assert "delegate -> sql (ok, 11ms)" in str(tree)


def test_an_rfc3339_time_in_a_dict_is_read_as_in_a_file() -> None:
    tree = agent_tree([{"type": "node", "ts": "2026-01-01T00:00:00Z", "runId": "r", "id": "a"}])
    assert str(tree) == "a"


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"type": "node", "ts": 1, "runId": "r"}, "missing required field `id`"),
        ({"type": "enter", "ts": 1, "runId": "c", "invocationId": "i", "agent": 7}, "`$.agent`"),
        ({"type": "exit", "ts": 1}, "missing required field"),
        ({"type": "launch", "ts": 1, "runId": "r"}, "Invalid value 'launch'"),
        ({"ts": 1, "runId": "r", "id": "a"}, "missing required field `type`"),
        ({"type": "node", "ts": "yesterday", "runId": "r", "id": "a"}, "neither milliseconds"),
        ({"type": "node", "ts": 1, "runId": "", "id": "a"}, "`$.runId`"),
    ],
)
def test_a_dict_that_is_no_record_names_its_index_and_the_fault(item: dict, said: str) -> None:
    events: list = [*_seed()[:2], item]
    with pytest.raises(InvalidRecordError) as caught:
        agent_tree(events)
    err = caught.value
    assert isinstance(err, TracekitError)
    assert err.index == 2 and str(err).startswith("events[2]: ")
    assert said in str(err)


def test_a_dict_nested_past_the_limit_is_refused_by_name() -> None:
    attrs: dict = {}
    for _ in range(200):
        attrs = {"a": attrs}
    with pytest.raises(InvalidRecordError, match=r"events\[0\]"):
        agent_tree([{"type": "node", "ts": 1, "runId": "r", "id": "a", "attrs": attrs}])


@pytest.mark.parametrize(
    ("item", "named"),
    [("enter", "a str"), (42, "a int"), (b'{"type":"node"}', "a bytes"), (None, "a NoneType")],
)
def test_anything_else_is_a_type_error_saying_what_is_taken(item: object, named: str) -> None:
    with pytest.raises(TypeError) as caught:
        agent_tree([*_seed(), item])
    text = str(caught.value)
    assert text.startswith(f"events[{len(_seed())}] is {named}")
    assert "dicts with the same keys" in text and "Enter, Exit, Node" in text


@pytest.mark.parametrize("events", ["a JSONL text", b"bytes", {"type": "node"}, 5])
def test_a_whole_string_dict_or_number_is_a_type_error(events: object) -> None:
    with pytest.raises(TypeError, match="must be an iterable of tracekit's records"):
        agent_tree(events)  # type: ignore[arg-type]


def test_a_subclass_of_a_record_is_taken_as_its_record() -> None:
    from tracekit.events import Node

    class MyNode(Node, tag="node"):
        pass

    assert str(agent_tree([MyNode(ts=1, runId="r", id="a")])) == "a"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(well_formed(), st.randoms(use_true_random=False))
def test_records_and_the_same_records_as_dicts_give_the_same_forest(
    stream: tuple, rng: object
) -> None:
    events, _ = stream
    dicts = _as_dicts(events)
    mixed = [d if rng.random() < 0.5 else e for d, e in zip(dicts, events, strict=True)]  # type: ignore[attr-defined]
    typed = build_forest(events)
    for other in (build_forest(dicts), build_forest(mixed)):
        assert forest_to_json(other) == forest_to_json(typed)
        assert describe_forest(other) == describe_forest(typed)
