"""Record AutoGen AgentChat through its own OpenTelemetry spans, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/autogen/bin/python tests/frameworks/record_autogen.py``.
Each agent is an ``AssistantAgent`` whose model is a ``ChatCompletionClient``
(AutoGen's own model interface) playing the turns written below; every
connection is refused. autogen-core writes GenAI spans (``invoke_agent``,
``execute_tool``) to the global tracer provider, and its agent runtime writes
its message spans (``create``/``process``/``publish``) there too.

Handoffs are a ``Swarm``'s own (``handoffs=[...]`` makes ``transfer_to_<agent>``
tools, and a ``HandoffMessage``); agent-as-tool is ``AgentTool``; the loop is a
``SelectorGroupChat`` whose selector model picks the next speaker. The truth is
read from the team's own result (``TaskResult.messages``: the tool calls, their
results with ``is_error``, the handoffs and who spoke).
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import Loop, Recorder, Truth, circle_of, go_offline, memory_provider, started

go_offline()
warnings.filterwarnings("ignore")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination  # noqa: E402
from autogen_agentchat.messages import (  # noqa: E402
    HandoffMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from autogen_agentchat.teams import SelectorGroupChat, Swarm  # noqa: E402
from autogen_agentchat.tools import AgentTool  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import (  # noqa: E402
    ChatCompletionClient,
    CreateResult,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import FunctionTool  # noqa: E402
from opentelemetry import trace  # noqa: E402

_ids = count(1)
DONE = "DONE"


def call(name: str, **args: Any) -> FunctionCall:
    return FunctionCall(id=f"call_{next(_ids)}", arguments=json.dumps(args), name=name)


class ScriptedClient(ChatCompletionClient):
    """Answers each request with the next turn: a text, or a list of tool calls."""

    def __init__(self, agent: str, turns: list[Any]) -> None:
        self.agent = agent
        self.turns = list(turns)

    async def create(self, messages: Any, *, tools: Any = (), tool_choice: Any = "auto",
                     json_output: Any = None, extra_create_args: Any = None,
                     cancellation_token: Any = None) -> CreateResult:  # fmt: skip
        started(self.agent)
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        turn = self.turns.pop(0)
        reason = "stop" if isinstance(turn, str) else "function_calls"
        usage = RequestUsage(prompt_tokens=120, completion_tokens=30)
        return CreateResult(finish_reason=reason, content=turn, usage=usage, cached=False)

    def create_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    def total_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    def count_tokens(self, messages: Any, *, tools: Any = ()) -> int:
        return 0

    def remaining_tokens(self, messages: Any, *, tools: Any = ()) -> int:
        return 100_000

    @property
    def capabilities(self) -> Any:
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(vision=False, function_calling=True, json_output=False,
                         family=ModelFamily.UNKNOWN, structured_output=False)  # fmt: skip


def plain_tool(name: str, answer: str, raises: str | None = None) -> FunctionTool:
    async def run(query: str) -> str:
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    return FunctionTool(run, name=name, description=f"{name}.")


def agent(name: str, turns: list[Any], tools: list[Any] = (), handoffs: list[str] = ()) -> Any:  # type: ignore[assignment]
    return AssistantAgent(
        name, model_client=ScriptedClient(name, turns), tools=list(tools) or None,
        handoffs=list(handoffs) or None, max_tool_iterations=4, description=f"The {name} agent.",
    )  # fmt: skip


def truth_of(messages: list[Any], nested: dict[str, str] | None = None) -> Truth:
    """The invocations from the team's messages: who spoke, what it called, how it went.

    A speaker is a new invocation whenever the speaker changes; its caller is the
    previous speaker (a handoff, through the ``transfer_to_<agent>`` tool when there
    was one). ``nested`` are agents run inside a tool (``AgentTool``, whose events
    the team streams with the inner agent as their source): tool name -> agent.
    """
    nested = nested or {}
    truth = Truth()
    index: dict[str, int] = {}  # nested agent -> its invocation
    current: int | None = None
    speaker: str | None = None
    pending_handoff: str | None = None
    results: dict[str, bool] = {}
    for m in messages:
        if isinstance(m, ToolCallExecutionEvent):
            results.update({r.call_id: not r.is_error for r in m.content})
    for m in messages:
        if m.source == "user":
            continue
        if m.source in index:  # an event of an agent running inside a tool
            if isinstance(m, ToolCallRequestEvent):
                for c in m.content:
                    truth.tool(index[m.source], c.name, results.get(c.id, False))
            continue
        if m.source != speaker:
            kind = None if current is None else "handoff"
            node = pending_handoff if current is not None else None
            current = truth.agent(m.source, current, kind, node)
            speaker, pending_handoff = m.source, None
        if isinstance(m, ToolCallRequestEvent):
            for c in m.content:
                if c.name.startswith("transfer_to_"):
                    pending_handoff = c.name
                    continue
                if c.name in nested:  # the tool is the node, not a step of the caller
                    index[nested[c.name]] = truth.agent(nested[c.name], current, "delegate", c.name)
                else:
                    truth.tool(current, c.name, results.get(c.id, False))
        elif isinstance(m, HandoffMessage):
            pending_handoff = pending_handoff or f"transfer_to_{m.target}"
    return truth


def final_of(result: Any) -> tuple[str, str]:
    last = result.messages[-1]
    return str(last.content), last.source


def write(recorder: Recorder, scenario: str, note: str, result: Any, truth: Truth) -> None:
    final, last = final_of(result)
    recorder.write(scenario, note=note,
                   result={"final_output": final, "last_agent": last, "raised": None},
                   run_ok=True, truth=truth)  # fmt: skip


async def handoff_chain(recorder: Recorder) -> None:
    team = Swarm(
        [
            agent("triage", [[call("lookup_customer", query="Ada")], [call("transfer_to_billing")]],
                  [plain_tool("lookup_customer", "C-1, Ada")], ["billing"]),
            agent("billing", [[call("get_invoice", query="C-1")], [call("transfer_to_refunds")]],
                  [plain_tool("get_invoice", "INV-7: 40 EUR")], ["refunds"]),
            agent("refunds", [[call("issue_refund", query="INV-7")], f"Refund R-9 issued. {DONE}"],
                  [plain_tool("issue_refund", "refund R-9 issued")]),
        ],
        termination_condition=TextMentionTermination(DONE),
    )  # fmt: skip
    recorder.start()
    result = await team.run(task="I was charged twice.")
    truth = truth_of(result.messages)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "refunds"]
    write(recorder, "handoff_chain",
          "A Swarm of three AssistantAgents; each hands off with its transfer_to_<agent> tool "
          "(handoffs=[...]), which ends its turn with a HandoffMessage; the Swarm's manager "
          "then runs the target.", result, truth)  # fmt: skip


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [[call("search_kb", query="router")], "Reset the router (KB-12)."],
                       [plain_tool("search_kb", "KB-12: reset the router")])  # fmt: skip
    team = Swarm(
        [
            agent("triage", [[call("transfer_to_support")]], [], ["support"]),
            agent("support", [[call("specialist", task="The router blinks red.")],
                              f"The specialist says: reset the router (KB-12). {DONE}"],
                  [AgentTool(specialist)]),
        ],
        termination_condition=TextMentionTermination(DONE, sources=["support"]),
    )  # fmt: skip
    recorder.start()
    result = await team.run(task="My router blinks red.")
    truth = truth_of(result.messages, {"specialist": "specialist"})
    assert [i["agent"] for i in truth.invocations] == ["triage", "support", "specialist"], truth
    write(recorder, "handoff_then_tool_agent",
          "A Swarm: triage hands off to support; support calls specialist through AgentTool "
          "(the tool is named after the agent), which runs the agent and returns its result.",
          result, truth)  # fmt: skip


async def tool_raises(recorder: Recorder) -> None:
    team = Swarm(
        [
            agent("triage", [[call("transfer_to_billing")]], [], ["billing"]),
            agent("billing", [[call("charge_card", query="C-1")], f"The card was declined. {DONE}"],
                  [plain_tool("charge_card", "", raises="card declined")]),
        ],
        termination_condition=TextMentionTermination(DONE),
    )  # fmt: skip
    recorder.start()
    result = await team.run(task="Charge my card.")
    truth = truth_of(result.messages)
    assert truth.invocations[1]["tools"] == [{"name": "charge_card", "ok": False}], truth
    write(recorder, "tool_raises",
          "billing's tool raises; AutoGen catches it and gives the model a "
          "FunctionExecutionResult with is_error=True, and billing's model answers: billing "
          "and the run end well, only the tool failed.", result, truth)  # fmt: skip


async def loop(recorder: Recorder) -> None:
    planner = agent("planner", ["Ask billing for the invoice.", f"The invoice is 40 EUR. {DONE}"])
    billing = agent("billing", [[call("get_invoice", query="C-1")], "INV-7: 40 EUR."],
                    [plain_tool("get_invoice", "INV-7: 40 EUR")])  # fmt: skip
    team = SelectorGroupChat(
        [planner, billing],
        model_client=ScriptedClient("selector", ["planner", "billing", "planner"]),
        termination_condition=TextMentionTermination(DONE),
        allow_repeated_speaker=True,
    )
    recorder.start()
    result = await team.run(task="How much is my invoice?")
    truth = truth_of(result.messages)
    assert [i["agent"] for i in truth.invocations] == ["planner", "billing", "planner"], truth
    write(recorder, "loop",
          "A SelectorGroupChat: its selector model picks planner, billing, then planner again. "
          "No agent hands off: the conversation passes from speaker to speaker through the "
          "group chat manager, so each speaker's caller in the truth is the previous speaker "
          "(kind handoff, no tool).", result, truth)  # fmt: skip


def bouncer(name: str, target: str, times: int = 40, then: str | None = None) -> Any:
    """A Swarm agent that hands off to ``target`` ``times`` times, then answers ``then``."""
    turns: list[Any] = [[call(f"transfer_to_{target}")] for _ in range(times)]
    return agent(name, [*turns, *([then] if then else [])], [], [target])


def dangling_handoff(truth: Truth, messages: list[Any]) -> None:
    """The last agent's handoff tool ran, but the limit stopped the team before its target
    spoke: a tool the agent called, with no agent after it."""
    results = {r.call_id: not r.is_error for m in messages if isinstance(m, ToolCallExecutionEvent)
               for r in m.content}  # fmt: skip
    last = [m for m in messages if isinstance(m, ToolCallRequestEvent)][-1]
    for c in last.content:
        if c.name.startswith("transfer_to_") and c.id in results:
            truth.tool(len(truth.invocations) - 1, c.name, results[c.id])


def ran_of(truth: Truth) -> list[str]:
    return [i["agent"] for i in truth.invocations]


async def silent_write(recorder: Recorder, scenario: str, team: Any, ring: list[str], turns: int,
                 stop: str, note: str) -> None:  # fmt: skip
    """Run ``team`` until its limit stops it silently: the stop reason, no error."""
    recorder.start()
    result = await team.run(task="Who handles my invoice?")
    assert result.stop_reason == stop, result.stop_reason
    truth = truth_of(result.messages)
    ran = ran_of(truth)
    assert ran == (ring * turns)[:turns], ran
    dangling_handoff(truth, result.messages)
    circle, closures = circle_of(ran)
    final, last = final_of(result)
    recorder.write(scenario, note=f"{note} The team's stop_reason: {stop!r}.",
                   result={"final_output": final, "last_agent": last, "raised": None},
                   run_ok=True, truth=truth, loop=Loop("degraded", circle, stop, closures))  # fmt: skip


async def pingpong_silent(recorder: Recorder) -> None:
    team = Swarm([bouncer("triage", "billing"), bouncer("billing", "triage")], max_turns=6)
    await silent_write(recorder, "pingpong_silent", team, ["triage", "billing"], 6,
                 "Maximum number of turns 6 reached.",
                 "A Swarm where triage and billing hand off to each other (transfer_to_<agent>) "
                 "until Swarm(max_turns=6) stops the run: run() returns a TaskResult, no error.")  # fmt: skip


async def pingpong_max_messages(recorder: Recorder) -> None:
    team = Swarm([bouncer("triage", "billing"), bouncer("billing", "triage")],
                 termination_condition=MaxMessageTermination(7))  # fmt: skip
    await silent_write(recorder, "pingpong_max_messages", team, ["triage", "billing"], 6,
                 "Maximum number of messages 7 reached, current message count: 7",
                 "A Swarm where triage and billing hand off to each other until "
                 "MaxMessageTermination(7) (the task and six HandoffMessages) stops the run: "
                 "run() returns a TaskResult, no error.")  # fmt: skip


async def ring_silent(recorder: Recorder) -> None:
    team = Swarm([bouncer("triage", "billing"), bouncer("billing", "refunds"),
                  bouncer("refunds", "triage")], max_turns=8)  # fmt: skip
    await silent_write(recorder, "ring_silent", team, ["triage", "billing", "refunds"], 8,
                 "Maximum number of turns 8 reached.",
                 "A Swarm ring of three: triage hands off to billing, billing to refunds, refunds "
                 "to triage, until Swarm(max_turns=8) stops the run, no error.")  # fmt: skip


async def loop_ok(recorder: Recorder) -> None:
    team = Swarm([bouncer("triage", "billing", 3, f"Your invoice INV-7 is 40 EUR. {DONE}"),
                  bouncer("billing", "triage", 3)],
                 termination_condition=TextMentionTermination(DONE))  # fmt: skip
    recorder.start()
    result = await team.run(task="How much is my invoice?")
    truth = truth_of(result.messages)
    ran = ran_of(truth)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    assert (circle, closures) == ("billing -> triage -> billing", 3)
    final, last = final_of(result)
    recorder.write("loop_ok",
                   note="A Swarm where triage and billing hand off to each other three times "
                   "each, then triage answers (TextMentionTermination). The team's stop_reason: "
                   f"{result.stop_reason!r}.",
                   result={"final_output": final, "last_agent": last, "raised": None},
                   run_ok=True, truth=truth, loop=Loop("ok", circle, None, closures))  # fmt: skip


class Unavailable(ScriptedClient):
    """A model client that raises, as a model whose service is down does."""

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        started(self.agent)
        raise RuntimeError("model service unavailable")


async def last_agent_raises(recorder: Recorder) -> None:
    billing = AssistantAgent("billing", model_client=Unavailable("billing", []),
                             description="The billing agent.")  # fmt: skip
    team = Swarm([bouncer("triage", "billing", 1), billing],
                 termination_condition=TextMentionTermination(DONE))  # fmt: skip
    recorder.start()
    seen: list[Any] = []
    try:
        async for message in team.run_stream(task="How much is my invoice?"):
            seen.append(message)
    except Exception as exc:  # its message goes on with the traceback (local paths): cut it
        raised = f"{type(exc).__name__}: {exc}".splitlines()[0]
    else:
        raise AssertionError("the team run was meant to raise")
    assert "model service unavailable" in raised, raised
    truth = truth_of([m for m in seen if hasattr(m, "source")])
    assert ran_of(truth) == ["triage"], truth
    b = truth.agent("billing", 0, "handoff", "transfer_to_billing")
    truth.failed(b)
    recorder.write(
        "last_agent_raises",
        note="A Swarm: triage hands off to billing, whose model raises (RuntimeError: model "
        "service unavailable). AutoGen does not catch it: the team run raises, and nothing "
        "runs after billing. The messages are what run_stream yielded before it raised.",
        result={"final_output": None, "last_agent": "billing", "raised": raised},
        run_ok=False,
        truth=truth,
        loop=Loop("failed:child", None, None, 0),
    )


def main() -> None:
    provider, exporter = memory_provider("autogen-recording")
    trace.set_tracer_provider(provider)
    recorder = Recorder("autogen", "autogen-agentchat", "native OpenTelemetry", exporter)
    scenarios = [handoff_chain, handoff_then_tool_agent, tool_raises, loop, pingpong_silent,
                 pingpong_max_messages, ring_silent, loop_ok, last_agent_raises]  # fmt: skip
    for scenario in recorder.chosen(scenarios):
        asyncio.run(scenario(recorder))
    provider.shutdown()


if __name__ == "__main__":
    main()
