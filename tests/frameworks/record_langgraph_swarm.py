"""Record langgraph-swarm through openinference-instrumentation-langchain, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/langgraph_swarm/bin/python tests/frameworks/record_langgraph_swarm.py``.
Each agent is a prebuilt ReAct agent (``create_react_agent``) whose model is a
LangChain ``BaseChatModel`` playing the turns written below (the scripted model
of ``record_langgraph.py``); every connection is refused. The agents are put
together by ``create_swarm``; a handoff is the swarm's own
``create_handoff_tool`` (``transfer_to_<agent>``).

The truth is read from the swarm's own state (its checkpointer): the messages
each agent's model wrote (``AIMessage.name`` is the agent), the tool calls in
them and the tool results (``ToolMessage.status``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import Loop, Recorder, Truth, circle_of, instrumented_by, memory_provider, started
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from openinference.instrumentation import TraceConfig
from openinference.instrumentation.langchain import LangChainInstrumentor
from record_langgraph import SPOKE, agent_tool, call, model, plain_tool  # offline from here on

HANDOFF = "transfer_to_"
APP: list[Any] = []  # the app's own tracer, around a run it handles


def agent(name: str, turns: list[Any], tools: list[Any]) -> Any:
    return create_react_agent(model(name, *turns), tools, name=name)


def handoff(target: str) -> Any:
    # Imported here: record_langgraph_supervisor.py shares this module's truth, not the swarm.
    from langgraph_swarm import create_handoff_tool

    return create_handoff_tool(agent_name=target)


def run(agents: list[Any], text: str, limit: int | None = None) -> tuple[list[Any], str | None]:
    """Run a swarm of ``agents`` (the first speaks first); its messages, and what it raised.

    ``limit`` is the graph's ``recursion_limit`` (LangGraph's default, 10007 in this version, without it).
    """
    from langgraph_swarm import create_swarm

    graph = create_swarm(agents, default_active_agent=agents[0].name).compile(
        checkpointer=InMemorySaver(), name="swarm"
    )
    config: dict[str, Any] = {"configurable": {"thread_id": "t1"}}
    if limit is not None:
        config["recursion_limit"] = limit
    started(agents[0].name)
    raised = None
    try:
        graph.invoke({"messages": [("user", text)]}, config)
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    state = graph.get_state(config, subgraphs=True)
    messages = list(state.values["messages"])
    # A run that raised left its last step unwritten: that step's agent (a subgraph) keeps
    # its own messages in its task's state.
    known = {m.id for m in messages}
    for task in state.tasks:
        if task.state is not None:
            messages += [m for m in task.state.values.get("messages", []) if m.id not in known]
    return messages, raised


def truth_of(messages: list[Any], raised: str | None) -> Truth:
    """Each agent's turns from the graph's messages: tools, handoffs, tool results.

    A new speaker (``AIMessage.name``) is a new invocation, called by the previous
    speaker through the handoff tool it called last (``transfer_to_<agent>``); a
    handoff written only as messages (langgraph-supervisor's handoff back, marked
    ``__is_handoff_back``) ran no tool, so it has no node.
    """
    truth = Truth()
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    current: int | None = None
    speaker: str | None = None
    node: str | None = None
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        if message.name != speaker:  # the first agent, or the target of the last handoff
            kind = None if current is None else "handoff"
            current = truth.agent(
                message.name, current, kind, node if current is not None else None
            )
            speaker, node = message.name, None
        for tool_call in message.tool_calls:
            if tool_call["name"].startswith("transfer_"):
                scripted = not message.response_metadata.get("__is_handoff_back")
                node = tool_call["name"] if scripted else None
                continue
            result = results.get(tool_call["id"])
            truth.tool(current, tool_call["name"], result is not None and result.status != "error")
    if raised is not None and current is not None:
        truth.failed(current)
    return truth


def last_agent(messages: list[Any]) -> str:
    return [m.name for m in messages if isinstance(m, AIMessage)][-1]


def final_text(messages: list[Any], raised: str | None) -> str | None:
    return None if raised else str(messages[-1].content)


def write(recorder: Recorder, scenario: str, note: str, messages: list[Any], raised: str | None,
          truth: Truth, loop: Loop | None = None) -> None:  # fmt: skip
    recorder.write(
        scenario,
        note=note,
        result={
            "final_output": final_text(messages, raised),
            "last_agent": last_agent(messages),
            "raised": raised,
        },
        run_ok=raised is None,
        truth=truth,
        loop=loop,
    )
    SPOKE.clear()


def handoff_chain(recorder: Recorder) -> None:
    agents = [
        agent("triage", [[call("lookup_customer", query="Ada")], [call("transfer_to_billing")]],
              [plain_tool("triage", "lookup_customer", "C-1, Ada"), handoff("billing")]),
        agent("billing", [[call("get_invoice", query="C-1")], [call("transfer_to_refunds")]],
              [plain_tool("billing", "get_invoice", "INV-7: 40 EUR"), handoff("refunds")]),
        agent("refunds", [[call("issue_refund", query="INV-7")], "Refund R-9 issued for INV-7."],
              [plain_tool("refunds", "issue_refund", "refund R-9 issued")]),
    ]  # fmt: skip
    recorder.start()
    messages, raised = run(agents, "I was charged twice.")
    assert raised is None and messages[-1].content == "Refund R-9 issued for INV-7.", raised
    write(recorder, "handoff_chain",
          "create_swarm of three create_react_agent agents; each hands off with the swarm's "
          "create_handoff_tool (transfer_to_<agent>), which returns Command(goto=<agent>, "
          "graph=Command.PARENT) and sets active_agent.", messages, raised,
          truth_of(messages, raised))  # fmt: skip


def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [[call("search_kb", query="router")], "Reset the router (KB-12)."],
                       [plain_tool("specialist", "search_kb", "KB-12: reset the router")])  # fmt: skip
    agents = [
        agent("triage", [[call("transfer_to_support")]], [handoff("support")]),
        agent("support", [[call("ask_specialist", request="The router blinks red.")],
                          "The specialist says: reset the router (KB-12)."],
              [agent_tool(specialist, "ask_specialist")]),
    ]  # fmt: skip
    recorder.start()
    messages, raised = run(agents, "My router blinks red.")
    assert raised is None, raised
    truth = truth_of(messages, raised)
    # specialist ran inside support's tool: its own messages are not the swarm's, and
    # the tool is the node between them, not a step of support's.
    support = truth.invocations[1]
    support["tools"] = [t for t in support["tools"] if t["name"] != "ask_specialist"]
    k = truth.agent("specialist", 1, "delegate", "ask_specialist")
    truth.tool(k, "search_kb")
    write(recorder, "handoff_then_tool_agent",
          "triage hands off to support (transfer_to_support); support calls specialist through "
          "a tool (ask_specialist) whose body invokes the agent.", messages, raised, truth)  # fmt: skip


def tool_raises(recorder: Recorder) -> None:
    agents = [
        agent("triage", [[call("transfer_to_billing")]], [handoff("billing")]),
        agent("billing", [[call("charge_card", query="C-1")]],
              [plain_tool("billing", "charge_card", "", raises="card declined")]),
    ]  # fmt: skip
    recorder.start()
    messages, raised = run(agents, "Charge my card.")
    assert raised == "RuntimeError: card declined", raised
    write(recorder, "tool_raises",
          "billing's tool raises; the prebuilt ToolNode re-raises it (its default error "
          "handling only catches bad tool calls), so the swarm's run raises.", messages, raised,
          truth_of(messages, raised))  # fmt: skip


def loop(recorder: Recorder) -> None:
    agents = [
        agent("triage", [[call("transfer_to_billing")], "Your invoice INV-7 is 40 EUR."],
              [handoff("billing")]),
        agent("billing", [[call("get_invoice", query="C-1")], [call("transfer_to_triage")]],
              [plain_tool("billing", "get_invoice", "INV-7: 40 EUR"), handoff("triage")]),
    ]  # fmt: skip
    recorder.start()
    messages, raised = run(agents, "How much is my invoice?")
    assert raised is None and messages[-1].content == "Your invoice INV-7 is 40 EUR.", raised
    truth = truth_of(messages, raised)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "triage"]
    write(recorder, "loop",
          "triage hands off to billing, which hands back to triage (transfer_to_triage): the "
          "swarm allows a loop; triage answers in its second invocation.", messages, raised,
          truth)  # fmt: skip


def bouncer(name: str, target: str, times: int = 40, then: str | None = None) -> Any:
    """An agent whose model hands off to ``target`` ``times`` times (then answers ``then``)."""
    turns: list[Any] = [[call(f"transfer_to_{target}")] for _ in range(times)]
    return agent(name, [*turns, *([then] if then else [])], [handoff(target)])


def loop_truth(messages: list[Any]) -> tuple[Truth, list[str]]:
    """The truth of a run the graph's recursion limit stopped (or of a loop that ended):
    every agent's step ended (the limit strikes between steps, on the graph), so no
    invocation failed."""
    truth = truth_of(messages, None)
    # The last agent's handoff tool ran (its ToolMessage is in the state) but the limit
    # struck before its target's step: a tool the agent called, with no agent after it.
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    last = [m for m in messages if isinstance(m, AIMessage)][-1]
    for tool_call in last.tool_calls:
        if tool_call["name"].startswith(HANDOFF) and tool_call["id"] in results:
            ok = results[tool_call["id"]].status != "error"
            truth.tool(len(truth.invocations) - 1, tool_call["name"], ok)
    return truth, [i["agent"] for i in truth.invocations]


def pingpong_limit(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing"), bouncer("billing", "triage")]
    recorder.start()
    messages, raised = run(agents, "Who handles my invoice?", limit=8)
    assert raised is not None and raised.startswith("GraphRecursionError: Recursion limit of 8"), (
        raised
    )
    truth, ran = loop_truth(messages)
    assert ran == ["triage", "billing"] * 4, ran
    circle, closures = circle_of(ran)
    assert circle == "billing -> triage -> billing", circle
    write(recorder, "pingpong_limit",
          "triage and billing hand off to each other (transfer_to_<agent>) until the graph's "
          "recursion_limit (8) stops the run: GraphRecursionError, raised by the swarm's "
          "invoke after eight agent steps that all ended.", messages, raised, truth,
          Loop("failed:recursion", circle, "GraphRecursionError", closures))  # fmt: skip


def ring_limit(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing"), bouncer("billing", "refunds"),
              bouncer("refunds", "triage")]  # fmt: skip
    recorder.start()
    messages, raised = run(agents, "Who handles my refund?", limit=9)
    assert raised is not None and raised.startswith("GraphRecursionError: Recursion limit of 9"), (
        raised
    )
    truth, ran = loop_truth(messages)
    assert ran == ["triage", "billing", "refunds"] * 3, ran
    circle, closures = circle_of(ran)
    assert circle == "billing -> refunds -> triage -> billing", circle
    write(recorder, "ring_limit",
          "A ring of three: triage hands to billing, billing to refunds, refunds back to "
          "triage, until the graph's recursion_limit (9) raises GraphRecursionError.",
          messages, raised, truth,
          Loop("failed:recursion", circle, "GraphRecursionError", closures))  # fmt: skip


def handled_limit(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing"), bouncer("billing", "triage")]
    recorder.start()
    # The app's own span (a web request's, say) holds the run; the app catches the
    # limit and answers, so its span ends well (the framework's run raised all the same).
    with APP[0].start_as_current_span("POST /chat"):
        messages, raised = run(agents, "Who handles my invoice?", limit=6)
        assert raised is not None and raised.startswith("GraphRecursionError"), raised
    truth, ran = loop_truth(messages)
    assert ran == ["triage", "billing"] * 3, ran
    circle, closures = circle_of(ran)
    write(recorder, "handled_limit",
          "triage and billing hand off to each other until the recursion_limit (6) raises "
          "GraphRecursionError out of the swarm's invoke; the app catches it and answers with "
          "an apology, so the request ends normally. The app's span (POST /chat, ended well) "
          "is the parent of the graph's root span, which carries the error.", messages, raised,
          truth, Loop("degraded", circle, "GraphRecursionError", closures))  # fmt: skip


def loop_ok(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing", 3, "Your invoice INV-7 is 40 EUR."),
              bouncer("billing", "triage", 3)]  # fmt: skip
    recorder.start()
    messages, raised = run(agents, "How much is my invoice?")
    assert raised is None and messages[-1].content == "Your invoice INV-7 is 40 EUR.", raised
    truth, ran = loop_truth(messages)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    assert (circle, closures) == ("billing -> triage -> billing", 3)
    write(recorder, "loop_ok",
          "triage and billing hand off to each other three times each, under the default "
          "recursion_limit (10007); then triage answers.", messages, raised, truth,
          Loop("ok", circle, None, closures))  # fmt: skip


def main() -> None:
    provider, exporter = memory_provider("langgraph-swarm-recording")
    # The graph's state (every message, on every span) is most of the bytes; the graph's
    # shape is all in the names and the metadata without it.
    config = TraceConfig(hide_inputs=True, hide_outputs=True)
    LangChainInstrumentor().instrument(tracer_provider=provider, config=config)
    APP.append(provider.get_tracer("app"))
    recorder = Recorder(
        "langgraph_swarm", "langgraph-swarm",
        instrumented_by("openinference-instrumentation-langchain"), exporter,
    )  # fmt: skip
    scenarios = [handoff_chain, handoff_then_tool_agent, tool_raises, loop, pingpong_limit,
                 ring_limit, handled_limit, loop_ok]  # fmt: skip
    for scenario in recorder.chosen(scenarios):
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
