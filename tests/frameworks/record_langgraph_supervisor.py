"""Record langgraph-supervisor through openinference-instrumentation-langchain, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/langgraph_supervisor/bin/python tests/frameworks/record_langgraph_supervisor.py``.
The workers are prebuilt ReAct agents (``create_react_agent``) and the
supervisor is ``create_supervisor``'s, all on the scripted LangChain chat model
of ``record_langgraph.py``; every connection is refused.

The supervisor's model hands a task to a worker with the supervisor's own
``transfer_to_<agent>`` tool (``Command(goto=<agent>, graph=Command.PARENT)``);
the worker returns control with no tool at all: langgraph-supervisor appends a
scripted pair of messages (``transfer_back_to_supervisor``, marked
``__is_handoff_back``) and the graph's edge goes back to the supervisor node.
The truth is read from the graph's own state, as for the swarm.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import Loop, Recorder, Truth, circle_of, instrumented_by, memory_provider, started
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor
from openinference.instrumentation import TraceConfig
from openinference.instrumentation.langchain import LangChainInstrumentor
from record_langgraph import agent_tool, call, model, plain_tool  # offline from here on
from record_langgraph_swarm import APP, truth_of, write

TIMES = 40  # turns enough for any loop the recursion limit cuts


def agent(name: str, turns: list[Any], tools: list[Any]) -> Any:
    return create_react_agent(model(name, *turns), tools, name=name)


def run(
    workers: list[Any], turns: list[Any], text: str, limit: int | None = None
) -> tuple[list[Any], str | None]:
    """Run the supervisor (its model playing ``turns``) over ``workers``; ``limit`` is the
    graph's ``recursion_limit`` (LangGraph's default, 10007 in this version, without it)."""
    graph = create_supervisor(
        workers, model=model("supervisor", *turns), output_mode="full_history"
    ).compile(checkpointer=InMemorySaver(), name="supervisor_graph")
    config: dict[str, Any] = {"configurable": {"thread_id": "t1"}}
    if limit is not None:
        config["recursion_limit"] = limit
    started("supervisor")
    raised = None
    try:
        graph.invoke({"messages": [("user", text)]}, config)
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    state = graph.get_state(config, subgraphs=True)
    messages = list(state.values["messages"])
    known = {m.id for m in messages}
    for task in state.tasks:  # a step that raised is only in its subgraph's state
        if task.state is not None:
            messages += [m for m in task.state.values.get("messages", []) if m.id not in known]
    return messages, raised


def handoff_chain(recorder: Recorder) -> None:
    workers = [
        agent("billing", [[call("get_invoice", query="C-1")], "INV-7 was paid twice."],
              [plain_tool("billing", "get_invoice", "INV-7: 40 EUR, paid twice")]),
        agent("refunds", [[call("issue_refund", query="INV-7")], "Refund R-9 issued."],
              [plain_tool("refunds", "issue_refund", "refund R-9 issued")]),
    ]  # fmt: skip
    recorder.start()
    messages, raised = run(
        workers,
        [[call("transfer_to_billing")], [call("transfer_to_refunds")], "Refund R-9 is on its way."],
        "I was charged twice.",
    )
    assert raised is None and messages[-1].content == "Refund R-9 is on its way.", raised
    truth = truth_of(messages, raised)
    agents = [i["agent"] for i in truth.invocations]
    assert agents == ["supervisor", "billing", "supervisor", "refunds", "supervisor"], agents
    write(recorder, "handoff_chain",
          "create_supervisor over two create_react_agent workers: the supervisor hands to "
          "billing (transfer_to_billing), billing returns (the scripted handoff-back messages, "
          "no tool), the supervisor hands to refunds, refunds returns, the supervisor answers. "
          "Each visit of the supervisor node is an invocation of its own.", messages, raised,
          truth)  # fmt: skip


def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [[call("search_kb", query="router")], "Reset the router (KB-12)."],
                       [plain_tool("specialist", "search_kb", "KB-12: reset the router")])  # fmt: skip
    support = agent("support", [[call("ask_specialist", request="Router blinks red.")],
                                "The specialist says: reset the router (KB-12)."],
                    [agent_tool(specialist, "ask_specialist")])  # fmt: skip
    recorder.start()
    messages, raised = run([support], [[call("transfer_to_support")], "Reset the router (KB-12)."],
                           "My router blinks red.")  # fmt: skip
    assert raised is None, raised
    truth = nest(truth_of(messages, raised), "support", "specialist", "ask_specialist", "search_kb")
    write(recorder, "handoff_then_tool_agent",
          "The supervisor hands to support; support calls specialist through a tool "
          "(ask_specialist) whose body invokes the agent; support returns to the supervisor, "
          "which answers.", messages, raised, truth)  # fmt: skip


def nest(truth: Truth, caller: str, agent: str, node: str, tool: str) -> Truth:
    """Add ``agent``, run inside ``caller``'s tool ``node`` (its messages are its own), in start order."""
    rows = truth.invocations
    at = next(n for n, row in enumerate(rows) if row["agent"] == caller)
    rows[at]["tools"] = [t for t in rows[at]["tools"] if t["name"] != node]  # the node, no step
    at = next(n for n, row in enumerate(rows) if row["agent"] == caller) + 1
    for row in rows[at:]:
        if row["parent"] is not None and row["parent"] >= at:
            row["parent"] += 1
    rows.insert(at, {"agent": agent, "parent": at - 1, "kind": "delegate", "node": node,
                     "ok": True, "tools": [{"name": tool, "ok": True}]})  # fmt: skip
    return truth


def tool_raises(recorder: Recorder) -> None:
    workers = [agent("billing", [[call("charge_card", query="C-1")]],
                     [plain_tool("billing", "charge_card", "", raises="card declined")])]  # fmt: skip
    recorder.start()
    messages, raised = run(workers, [[call("transfer_to_billing")]], "Charge my card.")
    assert raised == "RuntimeError: card declined", raised
    write(recorder, "tool_raises",
          "The supervisor hands to billing, whose tool raises; the prebuilt ToolNode re-raises "
          "it, so the run raises.", messages, raised, truth_of(messages, raised))  # fmt: skip


def loop(recorder: Recorder) -> None:
    workers = [agent("billing", [[call("get_invoice", query="C-1")], "INV-7: 40 EUR.",
                                 [call("get_invoice", query="C-2")], "INV-8: 12 EUR."],
                     [plain_tool("billing", "get_invoice", "an invoice")])]  # fmt: skip
    recorder.start()
    messages, raised = run(
        workers,
        [[call("transfer_to_billing")], [call("transfer_to_billing")], "52 EUR in all."],
        "How much do I owe on C-1 and C-2?",
    )
    assert raised is None and messages[-1].content == "52 EUR in all.", raised
    truth = truth_of(messages, raised)
    agents = [i["agent"] for i in truth.invocations]
    assert agents == ["supervisor", "billing", "supervisor", "billing", "supervisor"], agents
    write(recorder, "loop",
          "The supervisor hands to billing twice (a loop supervisor -> billing -> supervisor "
          "-> billing -> supervisor), then answers.", messages, raised, truth)  # fmt: skip


def worker(name: str, answer: str) -> Any:
    """A worker that answers every task it is handed (and hands back to the supervisor)."""
    return agent(name, [answer] * TIMES, [])


def handing(*targets: str, then: str | None = None) -> list[Any]:
    """The supervisor's turns: hand to each target in turn (round and round), then answer."""
    if then is not None:
        return [*([call(f"transfer_to_{t}")] for t in targets), then]
    return [[call(f"transfer_to_{targets[n % len(targets)]}")] for n in range(TIMES)]


def limited(
    recorder: Recorder, workers: list[Any], turns: list[Any], limit: int
) -> tuple[list[Any], str, Truth, list[str]]:
    recorder.start()
    messages, raised = run(workers, turns, "Where is my refund?", limit)
    prefix = f"GraphRecursionError: Recursion limit of {limit} reached"
    assert raised is not None and raised.startswith(prefix), raised
    # The limit strikes between the graph's steps: every agent's step ended.
    truth = truth_of(messages, None)
    return messages, raised, truth, [i["agent"] for i in truth.invocations]


def pingpong_limit(recorder: Recorder) -> None:
    workers = [worker("billing", "Still checking the invoice.")]
    messages, raised, truth, ran = limited(recorder, workers, handing("billing"), 8)
    assert ran == ["supervisor", "billing"] * 4, ran
    circle, closures = circle_of(ran)
    assert circle == "billing -> supervisor -> billing", circle
    write(recorder, "pingpong_limit",
          "The supervisor hands to billing again after each answer (billing hands back with "
          "the scripted handoff-back messages) until the graph's recursion_limit (8) raises "
          "GraphRecursionError; every agent step ended.", messages, raised, truth,
          Loop("failed:recursion", circle, "GraphRecursionError", closures))  # fmt: skip


def ring_limit(recorder: Recorder) -> None:
    workers = [worker("billing", "Ask refunds."), worker("refunds", "Ask billing.")]
    turns = handing("billing", "refunds")
    messages, raised, truth, ran = limited(recorder, workers, turns, 10)
    assert ran == ["supervisor", "billing", "supervisor", "refunds"] * 2 + ["supervisor", "billing"]
    circle, closures = circle_of(ran)
    assert circle == "billing -> supervisor -> refunds -> supervisor -> billing", circle
    write(recorder, "ring_limit",
          "Three agents round a ring: the supervisor hands to billing, billing back, the "
          "supervisor to refunds, refunds back, and again, until the recursion_limit (10) "
          "raises GraphRecursionError.", messages, raised, truth,
          Loop("failed:recursion", circle, "GraphRecursionError", closures))  # fmt: skip


def handled_limit(recorder: Recorder) -> None:
    workers = [worker("billing", "Still checking the invoice.")]
    # The app's own span holds the run; the app catches the limit and answers, so its
    # span ends well (the framework's run raised all the same).
    with APP[0].start_as_current_span("POST /chat"):
        messages, raised, truth, ran = limited(recorder, workers, handing("billing"), 6)
    assert ran == ["supervisor", "billing"] * 3, ran
    circle, closures = circle_of(ran)
    write(recorder, "handled_limit",
          "The supervisor hands to billing again after each answer until the recursion_limit "
          "(6) raises GraphRecursionError out of the graph's invoke; the app catches it and "
          "answers, so the request ends normally. The app's span (POST /chat, ended well) is "
          "the parent of the graph's root span, which carries the error.", messages, raised,
          truth, Loop("degraded", circle, "GraphRecursionError", closures))  # fmt: skip


def loop_ok(recorder: Recorder) -> None:
    workers = [worker("billing", "INV-7: 40 EUR.")]
    turns = handing("billing", "billing", "billing", then="40 EUR, checked three times.")
    recorder.start()
    messages, raised = run(workers, turns, "How much is my invoice?")
    assert raised is None and messages[-1].content == "40 EUR, checked three times.", raised
    truth = truth_of(messages, raised)
    ran = [i["agent"] for i in truth.invocations]
    assert ran == ["supervisor", "billing"] * 3 + ["supervisor"], ran
    circle, closures = circle_of(ran)
    assert (circle, closures) == ("billing -> supervisor -> billing", 3)
    write(recorder, "loop_ok",
          "The supervisor hands to billing three times, under the default recursion_limit "
          "(10007), then answers.", messages, raised, truth, Loop("ok", circle, None, closures))  # fmt: skip


def main() -> None:
    provider, exporter = memory_provider("langgraph-supervisor-recording")
    # The graph's state (every message, on every span) is most of the bytes; the graph's
    # shape is all in the names and the metadata without it.
    config = TraceConfig(hide_inputs=True, hide_outputs=True)
    LangChainInstrumentor().instrument(tracer_provider=provider, config=config)
    APP.append(provider.get_tracer("app"))
    recorder = Recorder(
        "langgraph_supervisor", "langgraph-supervisor",
        instrumented_by("openinference-instrumentation-langchain"), exporter,
    )  # fmt: skip
    scenarios = [handoff_chain, handoff_then_tool_agent, tool_raises, loop, pingpong_limit,
                 ring_limit, handled_limit, loop_ok]  # fmt: skip
    for scenario in recorder.chosen(scenarios):
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
