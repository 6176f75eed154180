"""Record LlamaIndex AgentWorkflow through openinference-instrumentation-llama-index, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/llama_index/bin/python tests/frameworks/record_llama_index.py``.
Each agent is a ``FunctionAgent`` whose LLM is LlamaIndex's own
``MockFunctionCallingLLM`` (a ``FunctionCallingLLM``) given a response generator
that plays the turns written below; every connection is refused.

Handoffs are the ``AgentWorkflow``'s own ``handoff`` tool (``to_agent``,
``reason``), which sets the next agent; agent-as-tool is a ``FunctionTool``
whose body runs an agent. The truth is read from the workflow's own event
stream (``AgentOutput`` per model turn with ``current_agent_name`` and its tool
calls; ``ToolCallResult`` with ``tool_output.is_error`` when a tool raised,
which the workflow catches and gives back to the model).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import (
    Loop,
    Recorder,
    Truth,
    circle_of,
    go_offline,
    instrumented_by,
    memory_provider,
    started,
)

go_offline()
warnings.filterwarnings("ignore")

from llama_index.core.agent.workflow import (  # noqa: E402
    AgentOutput,
    AgentWorkflow,
    FunctionAgent,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

_ids = count(1)


def call(name: str, **args: Any) -> ToolCallBlock:
    return ToolCallBlock(tool_call_id=f"call_{next(_ids)}", tool_name=name, tool_kwargs=args)


def llm(agent: str, *turns: Any) -> MockFunctionCallingLLM:
    """LlamaIndex's function-calling mock LLM, answering with the next turn each time."""
    script = list(turns)

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        started(agent)
        if not script:
            raise AssertionError(f"{agent}'s scripted model ran out of turns")
        turn = script.pop(0)
        if isinstance(turn, str):
            return ChatMessage(role="assistant", blocks=[TextBlock(text=turn)])
        return ChatMessage(role="assistant", blocks=list(turn))

    return MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)


def plain_tool(name: str, answer: str, raises: str | None = None) -> FunctionTool:
    def run(query: str) -> str:
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    return FunctionTool.from_defaults(run, name=name, description=f"{name}.")


def agent(name: str, turns: list[Any], tools: list[Any] = (), to: list[str] = ()) -> FunctionAgent:  # type: ignore[assignment]
    return FunctionAgent(name=name, description=f"The {name} agent.", llm=llm(name, *turns),
                         tools=list(tools), can_handoff_to=list(to))  # fmt: skip


async def run(workflow: Any, text: str) -> tuple[list[Any], Any]:
    """Run a workflow; every event it streamed, and its result."""
    handler = workflow.run(user_msg=text)
    events = [event async for event in handler.stream_events()]
    return events, await handler


def truth_of(events: list[Any], nested: dict[str, tuple[str, list[Any]]] | None = None) -> Truth:
    """The invocations from the event stream: a new ``current_agent_name`` is a handoff.

    ``nested``: tool -> (agent, its own events) for agents run inside a tool.
    """
    nested = nested or {}
    truth = Truth()
    results = {
        e.tool_id: not e.tool_output.is_error for e in events if isinstance(e, ToolCallResult)
    }
    current: int | None = None
    speaker: str | None = None
    node: str | None = None
    seen: set[str] = set()  # the same call may come in more than one AgentOutput
    for event in events:
        if not isinstance(event, AgentOutput):
            continue
        if event.current_agent_name != speaker:
            kind = None if current is None else "handoff"
            current = truth.agent(
                event.current_agent_name, current, kind, node if current is not None else None
            )
            speaker, node = event.current_agent_name, None
        for tool_call in event.tool_calls:
            if tool_call.tool_id in seen:
                continue
            seen.add(tool_call.tool_id)
            if tool_call.tool_name == "handoff":
                node = "handoff"
            elif tool_call.tool_name in nested:
                name, inner = nested[tool_call.tool_name]
                k = truth.agent(name, current, "delegate", tool_call.tool_name)
                for sub in truth_of(inner).invocations[0]["tools"]:
                    truth.tool(k, sub["name"], sub["ok"])
            else:
                truth.tool(current, tool_call.tool_name, results.get(tool_call.tool_id, False))
    return truth


def write(
    recorder: Recorder,
    scenario: str,
    note: str,
    events: list[Any],
    result: Any,
    truth: Truth,
    loop: Loop | None = None,
) -> None:
    last = [e.current_agent_name for e in events if isinstance(e, AgentOutput)][-1]
    recorder.write(scenario, note=note,
                   result={"final_output": str(result.response.content), "last_agent": last, "raised": None},
                   run_ok=True, truth=truth, loop=loop)  # fmt: skip


async def handoff_chain(recorder: Recorder) -> None:
    workflow = AgentWorkflow(agents=[
        agent("triage", [[call("lookup_customer", query="Ada")],
                         [call("handoff", to_agent="billing", reason="a double charge")]],
              [plain_tool("lookup_customer", "C-1, Ada")], ["billing"]),
        agent("billing", [[call("get_invoice", query="C-1")],
                          [call("handoff", to_agent="refunds", reason="refund INV-7")]],
              [plain_tool("get_invoice", "INV-7: 40 EUR")], ["refunds"]),
        agent("refunds", [[call("issue_refund", query="INV-7")], "Refund R-9 issued for INV-7."],
              [plain_tool("issue_refund", "refund R-9 issued")]),
    ], root_agent="triage")  # fmt: skip
    recorder.start()
    events, result = await run(workflow, "I was charged twice.")
    truth = truth_of(events)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "refunds"], truth
    write(recorder, "handoff_chain",
          "An AgentWorkflow of three FunctionAgents; each hands off with the workflow's own "
          "'handoff' tool (to_agent, reason), after which the workflow runs the target.",
          events, result, truth)  # fmt: skip


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [[call("search_kb", query="router")], "Reset the router (KB-12)."],
                       [plain_tool("search_kb", "KB-12: reset the router")])  # fmt: skip
    inner: list[Any] = []

    async def ask_specialist(request: str) -> str:
        events, result = await run(specialist, request)
        inner.extend(events)
        return str(result.response.content)

    workflow = AgentWorkflow(agents=[
        agent("triage", [[call("handoff", to_agent="support", reason="router")]], [], ["support"]),
        agent("support", [[call("ask_specialist", request="The router blinks red.")],
                          "The specialist says: reset the router (KB-12)."],
              [FunctionTool.from_defaults(ask_specialist, name="ask_specialist",
                                          description="Ask the specialist.")]),
    ], root_agent="triage")  # fmt: skip
    recorder.start()
    events, result = await run(workflow, "My router blinks red.")
    truth = truth_of(events, {"ask_specialist": ("specialist", inner)})
    assert [i["agent"] for i in truth.invocations] == ["triage", "support", "specialist"], truth
    write(recorder, "handoff_then_tool_agent",
          "triage hands off to support; support calls specialist through a FunctionTool "
          "(ask_specialist) whose body runs the agent (an agent is a workflow of its own).",
          events, result, truth)  # fmt: skip


async def tool_raises(recorder: Recorder) -> None:
    workflow = AgentWorkflow(agents=[
        agent("triage", [[call("handoff", to_agent="billing", reason="charge")]], [], ["billing"]),
        agent("billing", [[call("charge_card", query="C-1")], "The card was declined."],
              [plain_tool("charge_card", "", raises="card declined")]),
    ], root_agent="triage")  # fmt: skip
    recorder.start()
    events, result = await run(workflow, "Charge my card.")
    truth = truth_of(events)
    assert truth.invocations[1]["tools"] == [{"name": "charge_card", "ok": False}], (
        truth.invocations
    )
    write(recorder, "tool_raises",
          "billing's tool raises; the workflow catches it (a ToolOutput with is_error=True) "
          "and gives the error to billing's model, which answers: billing and the run end "
          "well, only the tool failed.", events, result, truth)  # fmt: skip


async def loop(recorder: Recorder) -> None:
    workflow = AgentWorkflow(agents=[
        agent("triage", [[call("handoff", to_agent="billing", reason="invoice")],
                         "Your invoice INV-7 is 40 EUR."], [], ["billing"]),
        agent("billing", [[call("get_invoice", query="C-1")],
                          [call("handoff", to_agent="triage", reason="answer")]],
              [plain_tool("get_invoice", "INV-7: 40 EUR")], ["triage"]),
    ], root_agent="triage")  # fmt: skip
    recorder.start()
    events, result = await run(workflow, "How much is my invoice?")
    truth = truth_of(events)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "triage"], truth
    write(recorder, "loop",
          "triage hands off to billing, which hands back to triage; triage answers in its "
          "second invocation.", events, result, truth)  # fmt: skip


SORRY = "Sorry, we could not finish; an agent will call you back."


def bouncer(name: str, target: str, times: int = 40, then: str | None = None) -> FunctionAgent:
    """An agent whose model hands off to ``target`` ``times`` times, then answers ``then``;
    asked for a last answer (the workflow's early-stopping prompt) it apologises."""
    script: list[Any] = [[call("handoff", to_agent=target, reason="yours")] for _ in range(times)]
    script += [then] if then else []

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        started(name)
        if "maximum number of iterations" in str(messages[-1].content):
            return ChatMessage(role="assistant", blocks=[TextBlock(text=SORRY)])
        turn = script.pop(0)
        if isinstance(turn, str):
            return ChatMessage(role="assistant", blocks=[TextBlock(text=turn)])
        return ChatMessage(role="assistant", blocks=list(turn))

    model = MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)
    return FunctionAgent(name=name, description=f"The {name} agent.", llm=model,
                         can_handoff_to=[target])  # fmt: skip


async def run_collecting(
    workflow: Any, text: str, **kwargs: Any
) -> tuple[list[Any], Any, str | None]:
    """Run a workflow; the events it streamed (those before a raise too), its result, and what
    it raised."""
    handler = workflow.run(user_msg=text, **kwargs)
    events: list[Any] = []
    try:
        async for event in handler.stream_events():
            events.append(event)
        return events, await handler, None
    except Exception as exc:
        return events, None, f"{type(exc).__name__}: {exc}"


def speakers(events: list[Any]) -> list[str]:
    ran: list[str] = []
    for event in events:
        if isinstance(event, AgentOutput) and (not ran or ran[-1] != event.current_agent_name):
            ran.append(event.current_agent_name)
    return ran


async def limited_write(recorder: Recorder, scenario: str, agents: list[FunctionAgent],
                        limit: int, ring: list[str], note: str) -> None:  # fmt: skip
    workflow = AgentWorkflow(agents=agents, root_agent=agents[0].name)
    recorder.start()
    events, _, raised = await run_collecting(
        workflow, "Who handles my invoice?", max_iterations=limit
    )
    assert raised is not None and raised.startswith(
        f"WorkflowRuntimeError: Max iterations of {limit} reached!"
    ), raised
    ran = speakers(events)
    assert ran == (ring * limit)[:limit], ran
    truth = truth_of(events)
    # The limit struck in the workflow's own step (parse_agent_output), after the agent's turn.
    circle, closures = circle_of(ran)
    recorder.write(
        scenario,
        note=f"{note} The sequence is the stream's AgentOutput events (current_agent_name).",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=truth,
        loop=Loop("failed:recursion", circle, "WorkflowRuntimeError", closures),
    )


async def pingpong_limit(recorder: Recorder) -> None:
    await limited_write(recorder, "pingpong_limit",
                        [bouncer("triage", "billing"), bouncer("billing", "triage")], 6,
                        ["triage", "billing"],
                        "triage and billing hand off to each other (the workflow's handoff tool) "
                        "until run(max_iterations=6): parsing the sixth agent output raises "
                        "WorkflowRuntimeError (early_stopping_method 'force', the default), "
                        "before billing's sixth handoff runs.")  # fmt: skip


async def ring_limit(recorder: Recorder) -> None:
    await limited_write(recorder, "ring_limit",
                        [bouncer("triage", "billing"), bouncer("billing", "refunds"),
                         bouncer("refunds", "triage")], 7, ["triage", "billing", "refunds"],
                        "A ring of three handoffs (triage -> billing -> refunds -> triage ...) "
                        "until run(max_iterations=7) raises WorkflowRuntimeError.")  # fmt: skip


async def handled_limit(recorder: Recorder) -> None:
    workflow = AgentWorkflow(agents=[bouncer("triage", "billing"), bouncer("billing", "triage")],
                             root_agent="triage", early_stopping_method="generate")  # fmt: skip
    recorder.start()
    events, result, raised = await run_collecting(workflow, "Who handles my invoice?",
                                                  max_iterations=4)  # fmt: skip
    assert raised is None and str(result.response.content) == SORRY, (raised, result)
    ran = speakers(events)
    assert ran == ["triage", "billing"] * 2, ran
    circle, closures = circle_of(ran)
    recorder.write(
        "handled_limit",
        note="triage and billing hand off to each other until run(max_iterations=4); the "
        "workflow's early_stopping_method='generate' asks the current agent's model for a last "
        "answer (DEFAULT_EARLY_STOPPING_PROMPT) instead of raising, and returns it.",
        result={"final_output": SORRY, "last_agent": ran[-1], "raised": None},
        run_ok=True,
        truth=truth_of(events),
        loop=Loop("degraded", circle, "max_iterations", closures),
    )


async def loop_ok(recorder: Recorder) -> None:
    workflow = AgentWorkflow(agents=[bouncer("triage", "billing", 3, "Your invoice INV-7 is 40 EUR."),
                                     bouncer("billing", "triage", 3)], root_agent="triage")  # fmt: skip
    recorder.start()
    events, result, raised = await run_collecting(workflow, "How much is my invoice?")
    assert raised is None and str(result.response.content) == "Your invoice INV-7 is 40 EUR."
    ran = speakers(events)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    write(recorder, "loop_ok",
          "triage and billing hand off to each other three times each, under the default "
          "max_iterations (20); then triage answers.", events, result, truth_of(events),
          Loop("ok", circle, None, closures))  # fmt: skip


def main() -> None:
    provider, exporter = memory_provider("llama-index-recording")
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    recorder = Recorder("llama_index", "llama-index-core",
                        instrumented_by("openinference-instrumentation-llama-index"), exporter)  # fmt: skip
    scenarios = [handoff_chain, handoff_then_tool_agent, tool_raises, loop, pingpong_limit,
                 ring_limit, handled_limit, loop_ok]  # fmt: skip
    for scenario in recorder.chosen(scenarios):
        asyncio.run(scenario(recorder))
    provider.shutdown()


if __name__ == "__main__":
    main()
