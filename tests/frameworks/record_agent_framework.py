"""Record Microsoft Agent Framework through its own OpenTelemetry spans, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/agent_framework/bin/python tests/frameworks/record_agent_framework.py``.
Each agent is an ``Agent`` whose client is a ``BaseChatClient`` subclass with the
framework's own function-invocation, middleware and telemetry layers (what its
real clients are made of) playing the turns written below; every connection is
refused. The framework writes its spans to the global tracer provider.

Handoffs are ``HandoffBuilder``'s own (``handoff_to_<agent>`` tools that its
middleware short-circuits: no tool span); the sequential workflow is
``SequentialBuilder``; agent-as-tool is ``Agent.as_tool()``. The truth is read
from the workflow's own outputs: one ``AgentResponse`` per agent turn, with its
function calls and their results (a result with an ``exception`` is a tool that
raised, which the framework caught and gave to the model).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import Loop, Recorder, Truth, circle_of, go_offline, memory_provider, started

go_offline()
warnings.filterwarnings("ignore")

from agent_framework import (  # noqa: E402
    Agent,
    AgentResponse,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)
from agent_framework.observability import ChatTelemetryLayer, enable_instrumentation  # noqa: E402
from agent_framework_orchestrations import HandoffBuilder, SequentialBuilder  # noqa: E402
from opentelemetry import trace  # noqa: E402

_ids = count(1)
DONE = "DONE"


class ScriptedClient(
    FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, BaseChatClient
):
    """Answers each request with the next turn: a text, or one tool call (name, arguments)."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, agent: str, turns: list[Any]) -> None:
        super().__init__()
        self.agent = agent
        self.turns = list(turns)

    def _inner_get_response(
        self, *, messages: Any, stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        if stream:  # Agent.as_tool runs its agent streaming: the same turn, as one update
            return self._build_response_stream(self._one_update())
        return self._respond()

    async def _one_update(self) -> Any:
        response = await self._respond()
        message = response.messages[0]
        yield ChatResponseUpdate(role="assistant", contents=message.contents, model=response.model)

    async def _respond(self) -> ChatResponse:
        started(self.agent)
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        turn = self.turns.pop(0)
        if isinstance(turn, str):
            content = Content.from_text(turn)
        else:
            content = Content.from_function_call(
                call_id=f"call_{next(_ids)}", name=turn[0], arguments=turn[1]
            )
        return ChatResponse(
            messages=[Message(role="assistant", contents=[content])],
            model=f"scripted-{self.agent}",
            usage_details={"input_token_count": 120, "output_token_count": 30},
        )


def plain_tool(name: str, answer: str, raises: str | None = None) -> Any:
    def run(query: str) -> str:
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    return tool(run, name=name, description=f"{name}.")


def agent(name: str, turns: list[Any], tools: list[Any] = ()) -> Agent:  # type: ignore[assignment]
    return Agent(client=ScriptedClient(name, turns), name=name, tools=list(tools) or None,
                 require_per_service_call_history_persistence=True)  # fmt: skip


def done(conversation: Any) -> bool:
    return any(DONE in (m.text or "") for m in conversation)


def handoffs(agents: list[Agent]) -> Any:
    return (
        HandoffBuilder(participants=agents, termination_condition=done)
        .with_start_agent(agents[0])
        .build()
    )


def truth_of(responses: list[Any], nested: dict[str, str] | None = None) -> Truth:
    """The invocations from the workflow's outputs: one agent turn each, in order.

    Each turn's caller is the turn before it (a handoff: the previous agent's
    ``handoff_to_<agent>`` call, which never runs as a tool, so there is no
    node; in a sequential workflow the workflow passes the conversation on). ``nested``: agents run inside a tool (tool -> agent),
    whose own calls are not in the workflow's outputs; their tools come from
    :data:`INNER`.
    """
    nested = nested or {}
    truth = Truth()
    current: int | None = None
    node: str | None = None
    for response in responses:
        messages = response.messages
        name = next(m.author_name for m in messages if m.author_name)
        kind = None if current is None else "handoff"
        current = truth.agent(name, current, kind, node if current is not None else None)
        node = None
        results = {
            c.call_id: c for m in messages for c in m.contents if c.type == "function_result"
        }
        for m in messages:
            for c in m.contents:
                if c.type != "function_call":
                    continue
                if c.name.startswith("handoff_to_"):
                    node = None  # the workflow's middleware short-circuits it: no tool ran
                elif c.name in nested:
                    inner = truth.agent(nested[c.name], current, "delegate", c.name)
                    for tool_name, ok in INNER[nested[c.name]]:
                        truth.tool(inner, tool_name, ok)
                else:
                    result = results.get(c.call_id)
                    truth.tool(current, c.name, result is not None and result.exception is None)
    return truth


INNER: dict[str, list[tuple[str, bool]]] = {}  # an agent run as a tool -> its own calls


def inner_calls(updates: list[Any]) -> list[tuple[str, bool]]:
    """The calls of an agent run as a tool, from the updates its stream callback was given."""
    contents = [c for u in updates for c in u.contents]
    results = {c.call_id: c for c in contents if c.type == "function_result"}
    return [(c.name, results[c.call_id].exception is None) for c in contents
            if c.type == "function_call" and c.call_id in results]  # fmt: skip


def write(recorder: Recorder, scenario: str, note: str, responses: list[Any], truth: Truth) -> None:
    last = responses[-1]
    author = next(m.author_name for m in last.messages if m.author_name)
    recorder.write(scenario, note=note,
                   result={"final_output": last.text, "last_agent": author, "raised": None},
                   run_ok=True, truth=truth)  # fmt: skip


async def handoff_chain(recorder: Recorder) -> None:
    workflow = handoffs([
        agent("triage", [("lookup_customer", {"query": "Ada"}), ("handoff_to_billing", {})],
              [plain_tool("lookup_customer", "C-1, Ada")]),
        agent("billing", [("get_invoice", {"query": "C-1"}), ("handoff_to_refunds", {})],
              [plain_tool("get_invoice", "INV-7: 40 EUR")]),
        agent("refunds", [("issue_refund", {"query": "INV-7"}), f"Refund R-9 issued. {DONE}"],
              [plain_tool("issue_refund", "refund R-9 issued")]),
    ])  # fmt: skip
    recorder.start()
    responses = (await workflow.run("I was charged twice.")).get_outputs()
    truth = truth_of(responses)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "refunds"], truth
    write(recorder, "handoff_chain",
          "A HandoffBuilder workflow of three agents; each hands off with its handoff_to_<agent> "
          "tool, which the workflow's middleware short-circuits (no tool span); the workflow "
          "then runs the target's executor.", responses, truth)  # fmt: skip


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [("search_kb", {"query": "router"}), "Reset the router (KB-12)."],
                       [plain_tool("search_kb", "KB-12: reset the router")])  # fmt: skip
    updates: list[Any] = []  # the framework's stream callback: the inner agent's own turn
    workflow = handoffs([
        agent("triage", [("handoff_to_support", {})]),
        agent("support", [("ask_specialist", {"task": "The router blinks red."}),
                          f"The specialist says: reset the router (KB-12). {DONE}"],
              [specialist.as_tool(name="ask_specialist", stream_callback=updates.append)]),
    ])  # fmt: skip
    recorder.start()
    responses = (await workflow.run("My router blinks red.")).get_outputs()
    INNER["specialist"] = inner_calls(updates)
    truth = truth_of(responses, {"ask_specialist": "specialist"})
    assert [i["agent"] for i in truth.invocations] == ["triage", "support", "specialist"], truth
    write(recorder, "handoff_then_tool_agent",
          "triage hands off to support; support calls specialist through Agent.as_tool "
          "(ask_specialist), which runs the agent inside the tool call.", responses, truth)  # fmt: skip


async def tool_raises(recorder: Recorder) -> None:
    workflow = handoffs([
        agent("triage", [("handoff_to_billing", {})]),
        agent("billing", [("charge_card", {"query": "C-1"}), f"The card was declined. {DONE}"],
              [plain_tool("charge_card", "", raises="card declined")]),
    ])  # fmt: skip
    recorder.start()
    responses = (await workflow.run("Charge my card.")).get_outputs()
    truth = truth_of(responses)
    assert truth.invocations[1]["tools"] == [{"name": "charge_card", "ok": False}], (
        truth.invocations
    )
    write(recorder, "tool_raises",
          "billing's tool raises; the framework catches it and gives the model a function "
          "result carrying the exception; billing's model answers: billing and the run end "
          "well, only the tool failed.", responses, truth)  # fmt: skip


async def loop(recorder: Recorder) -> None:
    workflow = handoffs([
        agent("triage", [("handoff_to_billing", {}), f"Your invoice INV-7 is 40 EUR. {DONE}"]),
        agent("billing", [("get_invoice", {"query": "C-1"}), ("handoff_to_triage", {})],
              [plain_tool("get_invoice", "INV-7: 40 EUR")]),
    ])  # fmt: skip
    recorder.start()
    responses = (await workflow.run("How much is my invoice?")).get_outputs()
    truth = truth_of(responses)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "triage"], truth
    write(recorder, "loop",
          "triage hands off to billing, which hands back to triage (handoff_to_triage); "
          "triage answers in its second turn.", responses, truth)  # fmt: skip


async def sequential(recorder: Recorder) -> None:
    workflow = SequentialBuilder(output_from="all", participants=[
        agent("triage", [("lookup_customer", {"query": "Ada"}), "Customer C-1."],
              [plain_tool("lookup_customer", "C-1, Ada")]),
        agent("billing", [("get_invoice", {"query": "C-1"}), "INV-7 was paid twice."],
              [plain_tool("get_invoice", "INV-7: 40 EUR")]),
        agent("refunds", [("issue_refund", {"query": "INV-7"}), "Refund R-9 issued."],
              [plain_tool("issue_refund", "refund R-9 issued")]),
    ]).build()  # fmt: skip
    recorder.start()
    responses = (await workflow.run("I was charged twice.")).get_outputs()
    truth = truth_of(responses)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "refunds"], truth
    write(recorder, "sequential",
          "A SequentialBuilder workflow: triage, then billing, then refunds, each given the "
          "conversation so far. No agent hands off: the workflow passes the conversation on, "
          "so each agent's caller in the truth is the one before it (kind handoff, no tool).",
          responses, truth)  # fmt: skip


def bouncer(name: str, target: str, times: int = 200, then: str | None = None) -> Agent:
    """An agent whose model hands off to ``target`` ``times`` times, then answers ``then``."""
    turns: list[Any] = [(f"handoff_to_{target}", {}) for _ in range(times)]
    return agent(name, [*turns, *([then] if then else [])])


async def outputs_until_raised(workflow: Any, text: str) -> tuple[list[Any], str | None]:
    """Run a workflow streaming; the agent responses it output (those before a raise too),
    and what it raised."""
    turns: list[list[Any]] = []  # each agent turn's updates (a new author or response: a new turn)
    raised = None
    try:
        async for event in workflow.run(text, stream=True):
            if event.type == "output":
                update = event.data
                last = turns[-1][-1] if turns else None
                if last is None or (last.author_name, last.response_id) != (
                    update.author_name,
                    update.response_id,
                ):
                    turns.append([])
                turns[-1].append(update)
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    return [AgentResponse.from_updates(t) for t in turns], raised


def authors(responses: list[Any]) -> list[str]:
    return [next(m.author_name for m in r.messages if m.author_name) for r in responses]


async def pingpong_limit(recorder: Recorder) -> None:
    workflow = handoffs([bouncer("triage", "billing"), bouncer("billing", "triage")])
    recorder.start()
    responses, raised = await outputs_until_raised(workflow, "Who handles my invoice?")
    assert raised is not None and raised.startswith("WorkflowConvergenceException: "), raised
    ran = authors(responses)
    n = len(ran)
    assert ran == ["triage", "billing"] * (n // 2) + ["triage"] * (n % 2), ran
    circle, closures = circle_of(ran)
    recorder.write(
        "pingpong_limit",
        note="triage and billing hand off to each other (handoff_to_<agent>) until the "
        "workflow's superstep limit (max_iterations, 100 by default; HandoffBuilder sets no "
        f"other) raises {raised.split(':')[0]} out of the streamed run, after {n} agent "
        "turns. The sequence is the workflow's outputs (one AgentResponse a turn).",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=truth_of(responses),
        loop=Loop("failed:recursion", circle, "WorkflowConvergenceException", closures),
    )


async def loop_ok(recorder: Recorder) -> None:
    workflow = handoffs([bouncer("triage", "billing", 3, f"Your invoice INV-7 is 40 EUR. {DONE}"),
                         bouncer("billing", "triage", 3)])  # fmt: skip
    recorder.start()
    responses = (await workflow.run("How much is my invoice?")).get_outputs()
    ran = authors(responses)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    last = responses[-1]
    recorder.write(
        "loop_ok",
        note="triage and billing hand off to each other three times each, then triage answers "
        "(the termination condition sees DONE).",
        result={"final_output": last.text, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth_of(responses),
        loop=Loop("ok", circle, None, closures),
    )


def main() -> None:
    provider, exporter = memory_provider("agent-framework-recording")
    trace.set_tracer_provider(provider)
    enable_instrumentation()
    recorder = Recorder("agent_framework", "agent-framework-core", "native OpenTelemetry", exporter)
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, loop, sequential, pingpong_limit,
         loop_ok]
    ):  # fmt: skip
        asyncio.run(scenario(recorder))
    provider.shutdown()


if __name__ == "__main__":
    main()
