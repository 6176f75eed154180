"""Edges that are not OTel parents: one hand-written trace for each framework shape.

Each shape is what a framework's own instrumentation writes (docs/otlp.md,
"What frameworks emit"); the tests read it through the installed reader and
check who called whom, the kind, the node, which rule found the edge, the
tools and their failures, usage and sessions.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_intake_otlp import TRACE, agent, doc, error, span, tool
from tracekit.events import Enter, Exit, Node, RunEnd, RunStart, Usage
from tracekit.intake.otlp.convert import otlp_to_events
from tracekit.intake.otlp.edges import EDGE_RULES, otel_parent
from tracekit.intake.otlp.spans import SpanIndex
from tracekit.tree import build_forest
from tracekit.tree.text import describe_forest


def sid(n: int) -> str:
    return f"{n:016x}"


def oi(
    n: int, name: str, kind: str, start: int, end: int, parent: int = 0, **attrs: Any
) -> dict[str, Any]:
    """An OpenInference span (``openinference.span.kind``)."""
    status = attrs.pop("status", None)
    events = attrs.pop("events", None)
    extra = {"events": events} if events else {}
    return span(
        sid(n),
        name,
        start,
        end,
        sid(parent) if parent else "",
        {"openinference.span.kind": kind, **attrs},
        status,
        **extra,
    )


def raised(kind: str, message: str) -> list[dict[str, Any]]:
    """An ``exception`` span event."""
    return [
        {
            "name": "exception",
            "attributes": [
                {"key": "exception.type", "value": {"stringValue": kind}},
                {"key": "exception.message", "value": {"stringValue": message}},
            ],
        }
    ]


def enters(events: list[Any]) -> list[tuple[str, str | None, str, str | None, str | None]]:
    """(agent, caller agent, kind, node, edge source) for each invocation, in start order."""
    names = {e.runId: e.agent for e in events if isinstance(e, (Enter, RunStart))}
    return [
        (e.agent, names.get(e.parentRunId or ""), e.kind, e.node, e.edge.source if e.edge else None)
        for e in events
        if isinstance(e, Enter)
    ]


def tools(events: list[Any], call: str = "tool") -> list[tuple[str, str, bool | None, str | None]]:
    names = {e.runId: e.agent for e in events if isinstance(e, (Enter, RunStart))}
    return [
        (names[e.runId], e.id, e.ok, e.error.code if e.error else None)
        for e in events
        if isinstance(e, Node) and e.call == call
    ]


# -- OpenAI Agents through OpenInference: handoff chain, the last tool raises --
OPENAI_OI = [
    oi(1, "Agent workflow", "AGENT", 0, 100, **{"session.id": "conv-7"}),
    oi(2, "triage", "AGENT", 1, 30, 1, **{"graph.node.id": "triage"}),
    oi(3, "turn", "CHAIN", 2, 29, 2),
    oi(
        4,
        "response",
        "LLM",
        3,
        10,
        3,
        **{"llm.model_name": "m1", "llm.token_count.prompt": 10, "llm.token_count.completion": 2},
    ),
    oi(5, "handoff to billing", "TOOL", 11, 12, 3),
    oi(
        6,
        "billing",
        "AGENT",
        31,
        60,
        1,
        **{"graph.node.id": "billing", "graph.node.parent_id": "triage"},
    ),
    oi(7, "turn", "CHAIN", 32, 59, 6),
    oi(
        8,
        "response",
        "LLM",
        33,
        40,
        7,
        **{"llm.model_name": "m1", "llm.token_count.prompt": 20, "llm.token_count.completion": 4},
    ),
    oi(9, "lookup", "TOOL", 41, 42, 7, **{"tool.name": "lookup"}),
    oi(10, "handoff to refunds", "TOOL", 43, 44, 7),
    oi(
        11,
        "refunds",
        "AGENT",
        61,
        99,
        1,
        **{"graph.node.id": "refunds", "graph.node.parent_id": "billing"},
        status=error("ValueError", "no such order"),
        events=raised("ValueError", "no such order"),
    ),
    oi(12, "turn", "CHAIN", 62, 98, 11),
    oi(
        13,
        "refund",
        "TOOL",
        63,
        64,
        12,
        **{"tool.name": "refund"},
        status=error("ValueError", "no such order"),
        events=raised("ValueError", "no such order"),
    ),
]


def test_openai_agents_handoffs_hang_from_the_agent_that_was_speaking() -> None:
    events = otlp_to_events(doc(*OPENAI_OI))
    assert enters(events) == [
        ("triage", "Agent workflow", "delegate", None, None),
        ("billing", "triage", "handoff", "handoff to billing", "handoff.span"),
        ("refunds", "billing", "handoff", "handoff to refunds", "handoff.span"),
    ]
    assert tools(events) == [
        ("billing", "lookup", True, None),
        ("refunds", "refund", False, "ValueError"),
    ]
    start = next(e for e in events if isinstance(e, RunStart))
    assert (start.agent, start.session) == ("Agent workflow", "conv-7")
    exits = {e.agent: e for e in events if isinstance(e, Exit)}
    assert exits["triage"].usage == Usage(inputTokens=10, outputTokens=2, models=["m1"])
    assert exits["refunds"].usage is None
    end = next(e for e in events if isinstance(e, RunEnd))
    # The processor marked the workflow OK; the last speaker raised, so the run did.
    assert not end.ok
    assert end.error is not None and end.error.cause is not None
    assert end.error.cause.code == "ValueError"


def test_openai_agents_tree_shows_the_failing_tool_and_hides_model_turns() -> None:
    forest = build_forest(otlp_to_events(doc(*OPENAI_OI)))
    text = describe_forest(forest)
    assert text == (
        "-> triage (ok, 29ms)\n"
        "  handoff to billing -> billing (handoff, ok, 29ms)\n"
        "    lookup\n"
        "    handoff to refunds -> refunds (handoff, error ValueError, 38ms)\n"
        "      refund (error ValueError)"
    )
    assert "response" in describe_forest(forest, show=("llm",))
    assert describe_forest(forest, errors_only=True).splitlines()[-1].strip() == (
        "refund (error ValueError)"
    )


def test_graph_node_parent_id_alone_finds_the_caller() -> None:
    spans = [s for s in OPENAI_OI if s["name"] not in ("handoff to billing", "handoff to refunds")]
    assert enters(otlp_to_events(doc(*spans)))[1:] == [
        ("billing", "triage", "handoff", None, "graph.node.parent_id"),
        ("refunds", "billing", "handoff", None, "graph.node.parent_id"),
    ]


# -- Google ADK: a transfer target hangs from the workflow; AgentTool nests --
def adk(
    n: int, name: str, start: int, end: int, parent: int, op: str, **attrs: Any
) -> dict[str, Any]:
    status = attrs.pop("status", None)
    return span(
        sid(n),
        name,
        start,
        end,
        sid(parent) if parent else "",
        {"gen_ai.operation.name": op, **attrs},
        status,
    )


ADK = [
    adk(1, "invoke_workflow desk", 0, 100, 0, "invoke_workflow"),
    adk(
        2,
        "invoke_agent root",
        1,
        40,
        1,
        "invoke_agent",
        **{"gen_ai.agent.name": "root", "gen_ai.conversation.id": "s-1"},
    ),
    span(
        sid(3),
        "call_llm",
        2,
        30,
        sid(2),
        {
            "gen_ai.request.model": "gemini",
            "gen_ai.usage.input_tokens": 7,
            "gen_ai.usage.output_tokens": 1,
        },
    ),
    adk(
        4,
        "execute_tool transfer_to_agent",
        20,
        21,
        3,
        "execute_tool",
        **{
            "gen_ai.tool.name": "transfer_to_agent",
            "gcp.vertex.agent.tool_call_args": '{"agent_name": "billing"}',
        },
    ),
    adk(5, "invoke_agent billing", 41, 90, 1, "invoke_agent", **{"gen_ai.agent.name": "billing"}),
    adk(6, "execute_tool helper", 42, 60, 5, "execute_tool", **{"gen_ai.tool.name": "helper"}),
    adk(7, "invoke_agent helper", 43, 59, 6, "invoke_agent", **{"gen_ai.agent.name": "helper"}),
]


def test_adk_transfer_to_agent_and_agent_tool() -> None:
    events = otlp_to_events(doc(*ADK))
    assert enters(events) == [
        ("root", "desk", "delegate", None, None),
        ("billing", "root", "handoff", "transfer_to_agent", "handoff.span"),
        ("helper", "billing", "delegate", "helper", None),
    ]
    assert next(e for e in events if isinstance(e, RunStart)).session == "s-1"
    exits = {e.agent: e for e in events if isinstance(e, Exit)}
    assert exits["root"].usage == Usage(inputTokens=7, outputTokens=1, models=["gemini"])


# -- Strands swarm: the handoff is named only in a span event --
def strands_handoff(n: int, start: int, parent: int, target: str) -> dict[str, Any]:
    out = adk(
        n,
        "execute_tool handoff_to_agent",
        start,
        start + 1,
        parent,
        "execute_tool",
        **{"gen_ai.tool.name": "handoff_to_agent"},
    )
    content = json.dumps({"agent_name": target, "message": "yours"})
    out["events"] = [
        {
            "name": "gen_ai.tool.message",
            "attributes": [{"key": "content", "value": {"stringValue": content}}],
        }
    ]
    return out


STRANDS = [
    adk(1, "invoke_swarm", 0, 100, 0, "invoke_swarm"),
    adk(2, "invoke_agent a", 1, 30, 1, "invoke_agent", **{"gen_ai.agent.name": "a"}),
    span(sid(3), "execute_event_loop_cycle", 2, 29, sid(2), {}),
    adk(4, "chat", 3, 10, 3, "chat", **{"gen_ai.request.model": "m"}),
    strands_handoff(5, 11, 3, "c"),
    adk(6, "invoke_agent b", 31, 50, 1, "invoke_agent", **{"gen_ai.agent.name": "b"}),
    adk(7, "invoke_agent c", 51, 90, 1, "invoke_agent", **{"gen_ai.agent.name": "c"}),
]


def test_strands_swarm_handoff_named_in_an_event_skips_the_agent_it_does_not_name() -> None:
    events = otlp_to_events(doc(*STRANDS))
    assert enters(events) == [
        ("a", "invoke_swarm", "delegate", None, None),
        ("b", "invoke_swarm", "delegate", None, None),
        ("c", "a", "handoff", "handoff_to_agent", "handoff.span"),
    ]
    assert tools(events, "llm") == [("a", "chat", True, None)]


# -- The GenAI conventions: transfer spans, the caller's name, span links --
def test_gen_ai_transfer_pass_control_and_return_to_caller() -> None:
    spans = [
        agent(sid(1), "a", 0, 30),
        tool(sid(2), "go", 10, 11, sid(1)),
        agent(sid(3), "b", 31, 60),
        tool(sid(4), "ask", 40, 41, sid(3)),
        agent(sid(5), "c", 42, 50),
    ]
    spans[1]["attributes"] += [
        {"key": "gen_ai.transfer.mode", "value": {"stringValue": "pass_control"}},
        {"key": "gen_ai.transfer.target.name", "value": {"stringValue": "b"}},
    ]
    spans[3]["attributes"] += [
        {"key": "gen_ai.transfer.mode", "value": {"stringValue": "return_to_caller"}},
        {"key": "gen_ai.transfer.target.name", "value": {"stringValue": "c"}},
    ]
    assert enters(otlp_to_events(doc(*spans))) == [
        ("b", "a", "handoff", "go", "gen_ai.transfer"),
        ("c", "b", "delegate", "ask", "gen_ai.transfer"),
    ]


def test_gen_ai_caller_and_span_link() -> None:
    spans = [
        agent(sid(1), "front", 0, 100),
        tool(sid(2), "call_remote", 10, 40, sid(1)),
        agent(sid(3), "remote", 11, 39, attrs={"gen_ai.caller.name": "front"}),
        tool(sid(4), "ask_linked", 50, 80, sid(1)),
        agent(sid(5), "linked", 51, 79, links=[{"traceId": TRACE, "spanId": sid(4)}]),
    ]
    assert enters(otlp_to_events(doc(*spans))) == [
        ("remote", "front", "delegate", "call_remote", "gen_ai.caller"),
        ("linked", "front", "delegate", "ask_linked", "span.link"),
    ]


# -- LangGraph through OpenInference: agents are subgraphs, kinds follow run names --
def lg(
    n: int,
    name: str,
    kind: str,
    start: int,
    end: int,
    parent: int,
    node: str | None,
    ns: str,
    **attrs: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"checkpoint_ns": ns} if ns else {}
    if node is not None:
        meta.update(langgraph_node=node, langgraph_step=1, langgraph_path=["__pregel_pull", node])
    return oi(n, name, kind, start, end, parent, metadata=json.dumps(meta), **attrs)


LANGGRAPH = [
    lg(1, "LangGraph", "CHAIN", 0, 100, 0, None, ""),
    lg(2, "supervisor", "CHAIN", 1, 30, 1, "supervisor", "supervisor:1"),
    lg(3, "agent", "AGENT", 2, 10, 2, "agent", "supervisor:1|agent:2"),
    lg(4, "ChatOpenAI", "LLM", 3, 9, 3, "agent", "supervisor:1|agent:2"),
    lg(5, "tools", "CHAIN", 11, 29, 2, "tools", "supervisor:1|tools:3"),
    lg(
        6,
        "transfer_to_billing",
        "TOOL",
        12,
        13,
        5,
        "tools",
        "supervisor:1|tools:3",
        **{"tool.name": "transfer_to_billing"},
    ),
    lg(7, "billing", "CHAIN", 31, 90, 1, "billing", "billing:4"),
    lg(8, "agent", "AGENT", 32, 60, 7, "agent", "billing:4|agent:5"),
    lg(9, "tools", "CHAIN", 61, 89, 7, "tools", "billing:4|tools:6"),
    lg(
        10,
        "refund",
        "TOOL",
        62,
        63,
        9,
        "tools",
        "billing:4|tools:6",
        **{"tool.name": "refund"},
        status=error("KeyError"),
    ),
]


def test_langgraph_agents_are_subgraphs_and_command_parent_is_a_handoff() -> None:
    events = otlp_to_events(doc(*LANGGRAPH))
    assert enters(events) == [
        ("supervisor", "LangGraph", "delegate", None, None),
        ("billing", "supervisor", "handoff", "transfer_to_billing", "handoff.span"),
    ]
    assert tools(events) == [("billing", "refund", False, "KeyError")]


# -- Pydantic AI: delegation inside a tool; failures without error.type --
PYDANTIC = [
    agent(sid(1), "boss", 0, 100, status=error("ValueError"), events=raised("ValueError", "bad")),
    tool(
        sid(2),
        "ask_worker",
        10,
        90,
        sid(1),
        status=error("ValueError"),
        events=raised("ValueError", "bad"),
    ),
    agent(
        sid(3),
        "worker",
        11,
        89,
        sid(2),
        status={"code": 2, "message": "bad"},
        events=raised("ValueError", "bad"),
    ),
]


def test_pydantic_ai_exception_events_are_failures_without_error_type() -> None:
    events = otlp_to_events(doc(*PYDANTIC))
    assert enters(events) == [("worker", "boss", "delegate", "ask_worker", None)]
    worker = next(e for e in events if isinstance(e, Exit))
    assert worker.error is not None and worker.error.code == "ValueError"
    end = next(e for e in events if isinstance(e, RunEnd))
    assert not end.ok and end.failure == "agent"


def test_exception_event_on_an_unset_status_is_a_failure() -> None:
    spans = [agent(sid(1), "a", 0, 10, events=raised("TimeoutError", "slow"))]
    end = next(e for e in otlp_to_events(doc(*spans)) if isinstance(e, RunEnd))
    assert not end.ok and end.error is not None
    assert (end.error.code, end.error.message) == ("TimeoutError", "slow")


# -- A circle seen only through GenAI spans --
def test_recursion_refusal_without_chain_gets_the_circle_from_the_path_above() -> None:
    spans = [
        agent(sid(1), "desk", 0, 100, status=error("AGENT_RECURSION")),
        tool(sid(2), "ask", 1, 99, sid(1)),
        agent(
            sid(3),
            "orders",
            2,
            98,
            sid(2),
            attrs={"error.type": "AGENT_RECURSION"},
            status=error("AGENT_RECURSION"),
        ),
        tool(sid(4), "ask", 3, 97, sid(3)),
        agent(
            sid(5),
            "billing",
            4,
            96,
            sid(4),
            attrs={"error.type": "AGENT_RECURSION"},
            status=error("AGENT_RECURSION"),
        ),
        tool(sid(6), "ask", 5, 6, sid(5)),
        agent(
            sid(7),
            "orders",
            5,
            6,
            sid(6),
            attrs={"error.type": "AGENT_RECURSION"},
            status=error("AGENT_RECURSION"),
        ),
    ]
    events = otlp_to_events(doc(*spans))
    refused = [e for e in events if isinstance(e, Exit) and e.status == "refused"]
    assert [e.error.chain for e in refused if e.error] == [["orders", "billing", "orders"]]


# -- The property: evidence that agrees with the span tree changes nothing --
@st.composite
def nested_traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Agents that nest under their callers' tool spans, with tools named like handoffs."""
    count = draw(st.integers(1, 8))
    names = st.sampled_from(["a", "b", "c", "transfer_to_b", "handoff to c", "lookup"])
    spans = [agent(sid(1), "a", 0, 10_000)]
    agents = [1]
    clock = 1
    for n in range(count):
        caller = draw(st.sampled_from(agents))
        tool_id, agent_id = 100 + n, 200 + n
        tool_name = draw(names)
        spans.append(tool(sid(tool_id), tool_name, clock, clock + 50, sid(caller)))
        name = draw(st.sampled_from(["a", "b", "c"]))
        spans.append(agent(sid(agent_id), name, clock + 1, clock + 49, sid(tool_id)))
        agents.append(agent_id)
        clock += 60
    return spans


@settings(max_examples=60, deadline=None)
@given(nested_traces())
def test_rules_change_nothing_when_every_edge_is_an_otel_parent(
    spans: list[dict[str, Any]],
) -> None:
    from tracekit.intake.otlp.decode_json import decode_spans

    keyed = {(s.trace, s.id): s for s in decode_spans(doc(*spans))}
    full = SpanIndex(dict(keyed), EDGE_RULES)
    plain = SpanIndex(dict(keyed), (otel_parent,))
    assert full.edges == plain.edges
    assert all(edge.source == "otel.parent" for edge in full.edges.values())


def test_openai_agents_native_handoff_span_names_both_sides() -> None:
    spans = [
        adk(1, "invoke_workflow desk", 0, 100, 0, "invoke_workflow"),
        agent(sid(2), "triage", 1, 30, sid(1)),
        span(sid(3), "handoff", 20, 21, sid(2), {"from_agent": "triage", "to_agent": "billing"}),
        agent(sid(4), "billing", 31, 90, sid(1)),
    ]
    assert enters(otlp_to_events(doc(*spans)))[1:] == [
        ("billing", "triage", "handoff", "handoff", "handoff.span"),
    ]


def test_a_genai_only_circle_is_classified_with_its_circle(tmp_path: Any) -> None:
    from tracekit.store import Store

    spans = [
        agent(sid(1), "desk", 0, 100, status=error("AGENT_RECURSION")),
        tool(sid(2), "ask", 1, 99, sid(1)),
        agent(sid(3), "orders", 2, 98, sid(2), status=error("AGENT_RECURSION"), attrs={"error.type": "AGENT_RECURSION"}),
        tool(sid(4), "ask", 3, 97, sid(3)),
        agent(sid(5), "billing", 4, 96, sid(4), status=error("AGENT_RECURSION"), attrs={"error.type": "AGENT_RECURSION"}),
        tool(sid(6), "ask", 5, 6, sid(5)),
        agent(sid(7), "orders", 5, 6, sid(6), status=error("AGENT_RECURSION"), attrs={"error.type": "AGENT_RECURSION"}),
    ]  # fmt: skip
    path = tmp_path / "circle.otlp.json"
    path.write_text(json.dumps(doc(*spans)) + "\n")
    with Store(tmp_path / "fleet.duckdb") as store:
        store.ingest(path)
        frame = store.sql("SELECT outcome, circle, origin_agent FROM runs")
    assert list(frame.itertuples(index=False, name=None)) == [
        ("failed:recursion", "billing -> orders -> billing", "orders")
    ]
