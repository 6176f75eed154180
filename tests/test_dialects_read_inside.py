"""Evidence a dialect reads inside attributes, and the ``tool.window`` edge rule, as properties.

A dialect may read an attribute inside its JSON value (``key#path``), gather
a graph's run metadata flattened one key an attribute (``metadata_from``), and
fail a span whose output says it failed (``failed_where``); an agent opened
under the run beside its caller, inside the caller's tool call, is that
call's delegate (``tool.window``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_dialects_rules import DOCS, SETTINGS, agents_of, raw_spans, root_of, string

from tracekit.intake.otlp.decode_json import decode_spans, hex_id
from tracekit.intake.otlp.dialect import attribute_of, parse_dialect
from tracekit.intake.otlp.dialects import tables, using
from tracekit.intake.otlp.spans import SpanIndex
from tracekit.tree import AgentStep, NodeStep, RunTree

_KEYS = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)


# -- an attribute read inside its JSON value --------------------------------------
@SETTINGS
@given(path=st.lists(_KEYS, min_size=1, max_size=4), leaf=st.text(min_size=1, max_size=8))
def test_a_path_reads_what_lies_there_and_nothing_else(path: list[str], leaf: str) -> None:
    value: Any = leaf
    for key in reversed(path):
        value = {key: value, "other": 1}
    attrs = {"out": json.dumps(value)}
    assert attribute_of(attrs, "out#" + ".".join(path)) == leaf
    assert attribute_of(attrs, "out#" + ".".join([*path, "deeper"])) is None
    assert attribute_of({"out": "not json " + leaf}, "out#" + ".".join(path)) is None


# -- a graph's metadata flattened one key an attribute ---------------------------
def _keys(docs: list[dict[str, Any]]) -> set[str]:
    return {a["key"] for s in raw_spans(docs) for a in s.get("attributes", ())}


# Graph recordings in JSON ``metadata`` that no built-in declaration claims (a user's
# dialect with no ``[recognise]`` reads only those).
_GRAPH_FILES = [
    p for p, docs in DOCS.items()
    if "langgraph_node" in str(docs) and "metadata" in _keys(docs)
    and tables().recognise_keys.isdisjoint(_keys(docs))
]  # fmt: skip
_FLAT = parse_dialect('[dialect]\nname = "flat"\n[edges]\nmetadata_from = ["app.meta."]\n', "t")


def _flattened(docs: list[dict[str, Any]], chosen: set[str]) -> list[dict[str, Any]]:
    """The spans whose id is in ``chosen`` with their ``metadata`` JSON flattened."""
    docs = copy.deepcopy(docs)
    for span in raw_spans(docs):
        if span["spanId"] not in chosen:
            continue
        kept = []
        for attr in span.get("attributes", ()):
            if attr["key"] != "metadata":
                kept.append(attr)
                continue
            for key, value in json.loads(attr["value"]["stringValue"]).items():
                kept.append(string(f"app.meta.{key}", json.dumps(value)))
        span["attributes"] = kept
    return docs


@SETTINGS
@given(data=st.data())
def test_flattened_run_metadata_reads_as_the_metadata_attribute(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_GRAPH_FILES), label="recording")
    docs = DOCS[path]
    ids = sorted({s["spanId"] for s in raw_spans(docs)})
    chosen = set(data.draw(st.lists(st.sampled_from(ids), unique=True), label="flattened"))
    with using([_FLAT]):
        before = agents_of(root_of(copy.deepcopy(docs)))
        after = agents_of(root_of(_flattened(docs, chosen)))
    assert after == before


# -- a failure written only in the output ----------------------------------------
_OUTPUT = "traceloop.entity.output"


def _ok_calls(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls (a task naming its tool) whose output says they went well."""
    return [
        s for s in raw_spans(docs)
        if any(a["key"] == "tool.name" for a in s.get("attributes", ()))
        and '"is_error": false' in str(s.get("attributes"))
        and "to_agent" not in str(s.get("attributes"))  # a handoff's call is its node, no step
    ]  # fmt: skip


_LLAMA = [p for p in DOCS if p.parent.name == "openllmetry_llama_index" and _ok_calls(DOCS[p])]


def _failed_tools(run: RunTree) -> int:
    count = 0
    stack: list[Any] = list(run.steps)
    while stack:
        step = stack.pop()
        if type(step) is NodeStep and step.call == "tool" and not step.ok:
            count += 1
        if isinstance(step, AgentStep):
            stack.extend(step.steps)
    return count


@SETTINGS
@given(data=st.data())
def test_an_output_saying_is_error_fails_that_tool_call_only(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_LLAMA), label="recording")
    docs = copy.deepcopy(DOCS[path])
    calls = _ok_calls(docs)
    before = _failed_tools(root_of(copy.deepcopy(docs)))
    call = data.draw(st.sampled_from(calls), label="tool call")
    for attr in call["attributes"]:
        if attr["key"] == _OUTPUT:
            text = attr["value"]["stringValue"]
            attr["value"]["stringValue"] = text.replace('"is_error": false', '"is_error": true')
    assert _failed_tools(root_of(docs)) == before + 1


# -- tool.window: an agent beside its caller, inside the caller's tool call ------
_BASE = 1_700_000_000_000_000_000
_NAMES = ("alpha", "bravo", "delta", "kilo", "oscar", "sierra")


@st.composite
def windows(draw: st.DrawFn) -> list[tuple[int, int, int, int, bool]]:
    """Per callee: its tool call's (start, end), its own (start, end), whether the tool names it.

    Tool calls and callees start in the same order; each callee runs inside its call.
    """
    count = draw(st.integers(1, len(_NAMES)))
    rows: list[tuple[int, int, int, int, bool]] = []
    tool_start = callee_start = 100
    for _ in range(count):
        tool_start += draw(st.integers(1, 50))
        callee_start = max(callee_start, tool_start) + draw(st.integers(1, 50))
        callee_end = callee_start + draw(st.integers(1, 500))
        tool_end = callee_end + draw(st.integers(0, 500))
        rows.append((tool_start, tool_end, callee_start, callee_end, draw(st.booleans())))
    return rows


def _window_trace(rows: list[tuple[int, int, int, int, bool]]) -> list[dict[str, Any]]:
    trace = "cd" * 16
    spans: list[dict[str, Any]] = []

    def emit(sid: str, parent: str, name: str, start: int, end: int, attrs: list[Any]) -> None:
        spans.append({"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": name,
                      "startTimeUnixNano": str(_BASE + start), "endTimeUnixNano": str(_BASE + end),
                      "attributes": attrs})  # fmt: skip

    last = max(row[1] for row in rows) + 10
    emit("f" * 16, "", "invoke_workflow desk", 0, last + 10,
         [string("gen_ai.operation.name", "invoke_workflow")])  # fmt: skip
    agent = [string("gen_ai.operation.name", "invoke_agent")]
    emit("c" * 16, "f" * 16, "invoke_agent lead", 10, last,
         [*agent, string("gen_ai.agent.name", "lead")])  # fmt: skip
    for n, (t0, t1, a0, a1, named) in enumerate(rows):
        tool = f"ask_{_NAMES[n]}" if named else f"call_{n}"
        emit(
            f"{n + 1:016x}",
            "c" * 16,
            f"execute_tool {tool}",
            t0,
            t1,
            [string("gen_ai.operation.name", "execute_tool"), string("gen_ai.tool.name", tool)],
        )
        emit(f"{n + 1:08x}{'a' * 8}", "f" * 16, f"invoke_agent {_NAMES[n]}", a0, a1,
             [*agent, string("gen_ai.agent.name", _NAMES[n])])  # fmt: skip
    return [{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}]


@SETTINGS
@given(rows=windows())
def test_an_agent_inside_a_callers_tool_call_is_its_delegate_through_it(
    rows: list[tuple[int, int, int, int, bool]],
) -> None:
    [doc] = _window_trace(rows)
    spans = {(s.trace, s.id): s for s in decode_spans(doc)}
    index = SpanIndex(spans)
    trace = "cd" * 16
    for n in range(len(rows)):
        edge = index.edges[(trace, hex_id(f"{n + 1:08x}{'a' * 8}"))]
        assert edge.parent == (trace, "c" * 16)
        assert edge.node == (trace, hex_id(f"{n + 1:016x}"))
        assert (edge.kind, edge.source) == ("delegate", "tool.window")


def test_an_agent_after_the_tool_call_ended_is_no_delegate_of_it(tmp_path: Path) -> None:
    [doc] = _window_trace([(100, 200, 150, 190, False)])
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    callee = next(s for s in spans if s["name"] == "invoke_agent alpha")
    callee["endTimeUnixNano"] = str(_BASE + 250)  # runs past the tool call: no call waited for it
    index = SpanIndex({(s.trace, s.id): s for s in decode_spans(doc)})
    edge = index.edges[("cd" * 16, hex_id(callee["spanId"]))]
    assert edge.source != "tool.window" and edge.node is None


# -- a delegation tool that returned before its member ran ------------------------
@SETTINGS
@given(order=st.permutations(_NAMES[:4]), gaps=st.lists(st.integers(1, 40), min_size=4, max_size=4))
def test_a_member_after_its_delegation_call_returned_is_delegated_through_it(
    order: list[str], gaps: list[int]
) -> None:
    trace, lead = "ef" * 16, "e" * 16
    agent = [string("gen_ai.operation.name", "invoke_agent")]
    spans = [{"traceId": trace, "spanId": lead, "parentSpanId": "", "name": "invoke_agent lead",
              "startTimeUnixNano": str(_BASE), "endTimeUnixNano": str(_BASE + 10_000),
              "attributes": [*agent, string("gen_ai.agent.name", "lead")]}]  # fmt: skip
    clock = 100
    for n, (name, gap) in enumerate(zip(order, gaps, strict=True)):
        call = [string("gen_ai.operation.name", "execute_tool"),
                string("gen_ai.tool.name", "delegate_task_to_member"),
                string("gen_ai.tool.call.arguments", json.dumps({"member_id": name}))]  # fmt: skip
        spans.append({"traceId": trace, "spanId": f"{n + 1:016x}", "parentSpanId": lead,
                      "name": "execute_tool delegate_task_to_member",
                      "startTimeUnixNano": str(_BASE + clock),
                      "endTimeUnixNano": str(_BASE + clock + 5), "attributes": call})  # fmt: skip
        clock += 5 + gap  # the call returned; the member runs after it, under the lead
        spans.append({"traceId": trace, "spanId": f"{n + 1:08x}{'b' * 8}", "parentSpanId": lead,
                      "name": f"invoke_agent {name}", "startTimeUnixNano": str(_BASE + clock),
                      "endTimeUnixNano": str(_BASE + clock + 50),
                      "attributes": [*agent, string("gen_ai.agent.name", name)]})  # fmt: skip
        clock += 60
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    index = SpanIndex({(s.trace, s.id): s for s in decode_spans(doc)})
    for n in range(len(order)):
        edge = index.edges[(trace, hex_id(f"{n + 1:08x}{'b' * 8}"))]
        assert (edge.parent, edge.node) == ((trace, lead), (trace, hex_id(f"{n + 1:016x}")))
        assert edge.kind == "delegate"


# -- unless, and glob values ------------------------------------------------------
@SETTINGS
@given(attrs=st.dictionaries(_KEYS, st.text(max_size=5), max_size=5), veto=_KEYS)
def test_a_section_never_claims_a_span_carrying_an_unless_key(
    attrs: dict[str, str], veto: str
) -> None:
    section = parse_dialect(
        f'[agents]\nattributes = ["{veto}"]\nwhere = {{ "kind" = "ag*" }}\nunless = ["{veto}"]\n',
        "t",
    ).agents
    assert not section.matches("x", {**attrs, veto: "1", "kind": "agent"})
    without = {k: v for k, v in attrs.items() if k != veto}
    assert section.matches("x", {**without, "kind": "Agent team"})
    assert not section.matches("x", {**without, "kind": "tool"})
