"""Record Strands Agents with its native OpenTelemetry spans, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/strands/bin/python tests/frameworks/record_strands.py``.
Each agent's model is a ``strands.models.Model`` (Strands' own model interface)
that streams the turns written below; every connection is refused. Handoffs are
a ``Swarm``'s own ``handoff_to_agent`` tool; agent-as-tool is ``Agent.as_tool``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
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
    in_start_order,
    memory_provider,
    started,
)

go_offline()
# Strands logs every failed model call and tool with its traceback; these are on purpose.
logging.getLogger("strands").setLevel(logging.CRITICAL)

from opentelemetry import trace  # noqa: E402

PROVIDER, EXPORTER = memory_provider("strands-recording")
trace.set_tracer_provider(PROVIDER)  # before Strands makes its tracer from the global provider

from strands import Agent, tool  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.multiagent import Swarm  # noqa: E402

_ids = count(1)
LOG: list[tuple[str, str, bool]] = []  # (agent, tool, ok): what the plain tools saw happen
SEEN: dict[str, list[str]] = {}  # agent -> the tool results its model was given


def call(name: str, **args: Any) -> tuple[str, dict[str, Any]]:
    return (name, args)


class ScriptedModel(Model):
    """Streams each turn: a text, a list of tool calls, or an exception to raise."""

    def __init__(self, agent: str, *turns: Any) -> None:
        self.agent = agent
        self.turns = list(turns)
        self.config: dict[str, Any] = {"model_id": f"scripted-{agent}"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the recordings use no structured output")
        yield  # pragma: no cover

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        started(self.agent)
        for message in messages:
            for block in message.get("content", []):
                if "toolResult" in block:
                    SEEN.setdefault(self.agent, []).append(
                        json.dumps(block["toolResult"], default=str)
                    )
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            stop = "end_turn"
        else:
            for name, args in turn:
                start = {"toolUse": {"toolUseId": f"tooluse_{next(_ids)}", "name": name}}
                yield {"contentBlockStart": {"start": start}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            stop = "tool_use"
        yield {"messageStop": {"stopReason": stop}}
        usage = {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


def plain_tool(agent: str, name: str, answer: str, *, raises: str | None = None) -> Any:
    """A plain tool that logs its call; with ``raises`` it raises."""

    def run(query: str) -> str:
        LOG.append((agent, name, raises is None))
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    run.__doc__ = f"{name} for {agent}.\n\nArgs:\n    query: what to look up\n"
    return tool(name=name)(run)


def agent(name: str, model: ScriptedModel, tools: list[Any]) -> Agent:
    return Agent(
        name=name,
        description=f"The {name} agent.",
        model=model,
        tools=tools,
        system_prompt=f"You are {name}.",
        callback_handler=None,
    )


def check(expected: list[tuple[str, str, bool]]) -> None:
    assert sorted(LOG) == sorted(expected), LOG
    LOG.clear()


def handoff(target: str) -> list[tuple[str, dict[str, Any]]]:
    return [call("handoff_to_agent", agent_name=target, message=f"over to {target}")]


async def run_swarm(*agents: Agent, task: str) -> tuple[str, str, list[str]]:
    """Run a swarm; return its final text, the last agent and the agents in the order they ran."""
    result = await Swarm(list(agents), entry_point=agents[0]).invoke_async(task)
    history = [node.node_id for node in result.node_history]
    last = history[-1]
    text = str(result.results[last].result).strip()
    assert result.status.value == "completed", result.status
    return text, last, history


async def handoff_chain(recorder: Recorder) -> None:
    triage = agent(
        "triage",
        ScriptedModel(
            "triage",
            [call("lookup_customer", query="Ada")],
            handoff("billing"),
            "Handed off to billing.",
        ),
        [plain_tool("triage", "lookup_customer", "C-1, Ada")],
    )
    billing = agent(
        "billing",
        ScriptedModel(
            "billing",
            [call("get_invoice", query="C-1")],
            handoff("refunds"),
            "Handed off to refunds.",
        ),
        [plain_tool("billing", "get_invoice", "INV-7: 40 EUR, paid twice")],
    )
    refunds = agent(
        "refunds",
        ScriptedModel(
            "refunds", [call("issue_refund", query="INV-7")], "Refund R-9 issued for INV-7."
        ),
        [plain_tool("refunds", "issue_refund", "refund R-9 issued")],
    )
    recorder.start()
    text, last, history = await run_swarm(triage, billing, refunds, task="I was charged twice.")
    assert (text, last, history) == (
        "Refund R-9 issued for INV-7.",
        "refunds",
        ["triage", "billing", "refunds"],
    ), (
        text,
        last,
        history,
    )
    check(
        [
            ("triage", "lookup_customer", True),
            ("billing", "get_invoice", True),
            ("refunds", "issue_refund", True),
        ]
    )
    truth = Truth()
    t = truth.agent("triage")
    truth.tool(t, "lookup_customer")
    b = truth.agent("billing", t, "handoff", "handoff_to_agent")
    truth.tool(b, "get_invoice")
    r = truth.agent("refunds", b, "handoff", "handoff_to_agent")
    truth.tool(r, "issue_refund")
    recorder.write(
        "handoff_chain",
        note=(
            "A Swarm of three agents; a handoff is the swarm's own handoff_to_agent tool (one "
            "tool name for every target). After handing off, each agent's model gets one more "
            "turn and says so; the swarm then runs the target."
        ),
        result={"final_output": text, "last_agent": last, "raised": None},
        run_ok=True,
        truth=truth,
    )


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent(
        "specialist",
        ScriptedModel(
            "specialist", [call("search_kb", query="router")], "Reset the router (KB-12)."
        ),
        [plain_tool("specialist", "search_kb", "KB-12: reset the router")],
    )
    support = agent(
        "support",
        ScriptedModel(
            "support",
            [call("ask_specialist", input="The router blinks red.")],
            "The specialist says: reset the router (KB-12).",
        ),
        [specialist.as_tool(name="ask_specialist", description="Ask the specialist.")],
    )
    triage = agent(
        "triage", ScriptedModel("triage", handoff("support"), "Handed off to support."), []
    )
    recorder.start()
    text, last, history = await run_swarm(triage, support, task="My router blinks red.")
    assert (text, last, history) == (
        "The specialist says: reset the router (KB-12).",
        "support",
        ["triage", "support"],
    )
    assert any("KB-12" in s for s in SEEN["support"]), SEEN
    check([("specialist", "search_kb", True)])
    truth = Truth()
    t = truth.agent("triage")
    s = truth.agent("support", t, "handoff", "handoff_to_agent")
    k = truth.agent("specialist", s, "delegate", "ask_specialist")
    truth.tool(k, "search_kb")
    recorder.write(
        "handoff_then_tool_agent",
        note="triage hands off to support in a Swarm; support calls specialist through Agent.as_tool (ask_specialist).",
        result={"final_output": text, "last_agent": last, "raised": None},
        run_ok=True,
        truth=truth,
    )


async def tool_raises(recorder: Recorder) -> None:
    billing = agent(
        "billing",
        ScriptedModel(
            "billing", [call("charge_card", query="C-1")], "Sorry, the card was declined."
        ),
        [plain_tool("billing", "charge_card", "", raises="card declined")],
    )
    triage = agent(
        "triage", ScriptedModel("triage", handoff("billing"), "Handed off to billing."), []
    )
    recorder.start()
    text, last, history = await run_swarm(triage, billing, task="Charge my card.")
    assert (text, last, history) == (
        "Sorry, the card was declined.",
        "billing",
        ["triage", "billing"],
    )
    assert any("card declined" in s and '"error"' in s for s in SEEN["billing"]), SEEN
    check([("billing", "charge_card", False)])
    truth = Truth()
    t = truth.agent("triage")
    b = truth.agent("billing", t, "handoff", "handoff_to_agent")
    truth.tool(b, "charge_card", ok=False)
    recorder.write(
        "tool_raises",
        note=(
            "billing's tool raises; Strands turns a tool's exception into an error tool result "
            "for the model (it does not raise), so billing answers and the swarm completes: "
            "the run recovers, and no invocation raised."
        ),
        result={"final_output": text, "last_agent": last, "raised": None},
        run_ok=True,
        truth=truth,
    )


async def parallel_delegates(recorder: Recorder) -> None:
    flights = agent(
        "flights",
        ScriptedModel("flights", [call("search_flights", query="Lisbon")], "TP-101 at 9:00"),
        [plain_tool("flights", "search_flights", "TP-101 at 9:00")],
    )
    hotels = agent(
        "hotels",
        ScriptedModel("hotels", [call("search_hotels", query="Lisbon")], "Hotel Tejo"),
        [plain_tool("hotels", "search_hotels", "Hotel Tejo")],
    )
    cars = agent(
        "cars",
        ScriptedModel("cars", RuntimeError("cars model unavailable")),
        [plain_tool("cars", "rent_car", "")],
    )
    helpers = (flights, hotels, cars)
    coordinator = agent(
        "coordinator",
        ScriptedModel(
            "coordinator",
            [call(f"ask_{h.name}", input="Lisbon") for h in helpers],
            "Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented.",
        ),
        [h.as_tool(name=f"ask_{h.name}", description=f"Ask {h.name}.") for h in helpers],
    )
    recorder.start()
    result = await coordinator.invoke_async("Plan my Lisbon trip.")
    text = str(result).strip()
    assert text.startswith("Booked TP-101"), text
    assert any("cars model unavailable" in s and '"error"' in s for s in SEEN["coordinator"]), SEEN
    check([("flights", "search_flights", True), ("hotels", "search_hotels", True)])
    truth = Truth()
    c = truth.agent("coordinator")
    plain = {"flights": "search_flights", "hotels": "search_hotels"}
    for name in in_start_order(["flights", "hotels", "cars"]):
        i = truth.agent(name, c, "delegate", f"ask_{name}")
        if name in plain:
            truth.tool(i, plain[name])
        else:
            truth.failed(i)  # cars' model raised before any tool was called
    recorder.write(
        "parallel_delegates",
        note=(
            "The coordinator calls three Agent.as_tool tools in one message; Strands runs them "
            "concurrently. cars' model raises on its first call (a tool's exception would not "
            "fail an agent in Strands), so cars raises; the agent tool turns that into an error "
            "result and the coordinator answers."
        ),
        result={"final_output": text, "last_agent": "coordinator", "raised": None},
        run_ok=True,
        truth=truth,
    )


def bouncer(name: str, target: str, times: int = 40, then: str | None = None) -> Agent:
    """An agent whose model hands off to ``target`` ``times`` times, then answers ``then``
    (after a handoff the agent's turn goes on to a text, as a real model's does)."""
    turns: list[Any] = [t for _ in range(times) for t in (handoff(target), f"Over to {target}.")]
    return agent(name, ScriptedModel(name, *turns, *([then] if then else [])), [])


def history_truth(history: list[str], dangling: bool) -> Truth:
    """Each agent handed off to the next (handoff_to_agent); with ``dangling`` the last one's
    handoff ran too, but the swarm stopped before its target."""
    truth = Truth()
    for n, name in enumerate(history):
        if n == 0:
            truth.agent(name)
        else:
            truth.agent(name, n - 1, "handoff", "handoff_to_agent")
    if dangling:
        truth.tool(len(history) - 1, "handoff_to_agent")
    return truth


async def stopped_write(recorder: Recorder, scenario: str, swarm: Swarm, ring: list[str],
                        runs: int, limit: str, note: str) -> None:  # fmt: skip
    """Run ``swarm`` until a limit of its stops it: status FAILED, returned, nothing raised."""
    recorder.start()
    result = await swarm.invoke_async("Who handles my invoice?")
    history = [node.node_id for node in result.node_history]
    assert result.status.value == "failed", result.status
    assert history == (ring * runs)[:runs], history
    circle, closures = circle_of(history)
    recorder.write(
        scenario,
        note=f"{note} invoke_async returns a SwarmResult with status FAILED; the reason is "
        "only in Strands' debug log. The sequence is SwarmResult.node_history.",
        result={"final_output": None, "last_agent": history[-1], "raised": None},
        run_ok=True,
        truth=history_truth(history, True),
        loop=Loop("degraded", circle, limit, closures),
    )


async def pingpong_silent(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing"), bouncer("billing", "triage")]
    await stopped_write(recorder, "pingpong_silent", Swarm(agents, entry_point=agents[0], max_handoffs=6), ["triage", "billing"], 6,
                        "max_handoffs", "triage and billing hand off to each other "
                        "(handoff_to_agent) until Swarm(max_handoffs=6) stops the swarm.")  # fmt: skip


async def pingpong_repetitive(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing"), bouncer("billing", "triage")]
    swarm = Swarm(agents, entry_point=agents[0], repetitive_handoff_detection_window=4,
                  repetitive_handoff_min_unique_agents=3)  # fmt: skip
    await stopped_write(recorder, "pingpong_repetitive", swarm, ["triage", "billing"], 4,
                        "repetitive_handoff_detection", "triage and billing hand off to each "
                        "other until the swarm's repetitive-handoff detection (window 4, at "
                        "least 3 distinct agents) stops it.")  # fmt: skip


async def ring_silent(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing"), bouncer("billing", "refunds"),
              bouncer("refunds", "triage")]  # fmt: skip
    await stopped_write(recorder, "ring_silent", Swarm(agents, entry_point=agents[0], max_iterations=8),
                        ["triage", "billing", "refunds"], 8, "max_iterations",
                        "A ring of three: triage hands off to billing, billing to refunds, refunds "
                        "to triage, until Swarm(max_iterations=8) stops the swarm.")  # fmt: skip


async def loop_ok(recorder: Recorder) -> None:
    agents = [bouncer("triage", "billing", 3, "Your invoice INV-7 is 40 EUR."),
              bouncer("billing", "triage", 3)]  # fmt: skip
    recorder.start()
    text, last, history = await run_swarm(*agents, task="How much is my invoice?")
    assert history == ["triage", "billing"] * 3 + ["triage"], history
    assert text == "Your invoice INV-7 is 40 EUR.", text
    circle, closures = circle_of(history)
    recorder.write(
        "loop_ok",
        note="triage and billing hand off to each other three times each, under the swarm's "
        "default limits (max_handoffs and max_iterations 20); then triage answers.",
        result={"final_output": text, "last_agent": last, "raised": None},
        run_ok=True,
        truth=history_truth(history, False),
        loop=Loop("ok", circle, None, closures),
    )


async def main() -> None:
    recorder = Recorder("strands", "strands-agents", "native OpenTelemetry", EXPORTER)
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, parallel_delegates, pingpong_silent,
         pingpong_repetitive, ring_silent, loop_ok]
    ):  # fmt: skip
        SEEN.clear()
        await scenario(recorder)
    PROVIDER.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
