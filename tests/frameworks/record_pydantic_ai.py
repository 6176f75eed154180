"""Record Pydantic AI with its native OpenTelemetry instrumentation, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/pydantic_ai/bin/python tests/frameworks/record_pydantic_ai.py``.
Each agent's model is a ``FunctionModel`` (Pydantic AI's own model interface for
scripted answers) that plays the turns written below; every connection is refused.

Pydantic AI has no handoff of its own. A handoff here is its documented idiom for
one: an output function (``ToolOutput``) that runs the next agent, whose answer is
the run's final output (the first agent never speaks again). Agent-as-tool is a
plain tool whose body runs another agent (``usage=ctx.usage``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
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

from pydantic_ai import Agent, ModelRetry, RunContext, Tool, ToolOutput  # noqa: E402
from pydantic_ai.exceptions import UsageLimitExceeded  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

LOG: list[tuple[str, str, bool]] = []  # (agent, tool, ok): what the plain tools saw happen
SPOKE: list[str] = []  # the agents whose model gave a final text answer, in order


def call(name: str, **args: Any) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args)


def scripted(agent: str, *turns: list[Any]) -> FunctionModel:
    """A model that answers each request with the next turn's parts."""
    script = list(turns)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not script:
            raise AssertionError(f"{agent}'s scripted model ran out of turns")
        parts = script.pop(0)
        if any(isinstance(p, TextPart) for p in parts):
            SPOKE.append(agent)
        return ModelResponse(parts=parts)

    return FunctionModel(respond, model_name=f"scripted-{agent}")


def plain_tool(agent: str, name: str, answer: str, *, raises: str | None = None) -> Tool[Any]:
    """A plain tool that logs its call; with ``raises`` it raises (Pydantic AI lets it propagate)."""

    def run(query: str) -> str:
        LOG.append((agent, name, raises is None))
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    return Tool(run, name=name, description=f"{name} for {agent}.")


def handoff_to(target: Agent[None, str]) -> ToolOutput[Any]:
    """An output function that hands the conversation to ``target``; its answer is the output."""

    async def transfer(ctx: RunContext[None], request: str) -> str:
        result = await target.run(request, usage=ctx.usage)
        return result.output

    return ToolOutput(transfer, name=f"transfer_to_{target.name}")


def agent_tool(target: Agent[None, str], name: str, *, recover: bool = False) -> Tool[Any]:
    """A tool whose body runs ``target``; with ``recover`` a failure becomes a ModelRetry."""

    async def ask(ctx: RunContext[None], request: str) -> str:
        started(target.name)
        try:
            result = await target.run(request, usage=ctx.usage)
        except RuntimeError as exc:
            if not recover:
                raise
            raise ModelRetry(f"{target.name} failed: {exc}") from exc
        return result.output

    return Tool(ask, name=name, description=f"Ask {target.name}.")


def agent(
    name: str, model: FunctionModel, tools: list[Any], outputs: list[Any] | None = None
) -> Agent[None, str]:
    output_type: Any = [*outputs, str] if outputs else str
    return Agent(
        model, name=name, tools=tools, output_type=output_type, instructions=f"You are {name}."
    )


def check(expected_log: list[tuple[str, str, bool]], spoke: list[str]) -> None:
    assert sorted(LOG) == sorted(expected_log), LOG
    assert spoke == SPOKE, SPOKE
    LOG.clear()
    SPOKE.clear()


async def handoff_chain(recorder: Recorder) -> None:
    refunds = agent(
        "refunds",
        scripted(
            "refunds",
            [call("issue_refund", query="INV-7")],
            [TextPart("Refund R-9 issued for INV-7.")],
        ),
        [plain_tool("refunds", "issue_refund", "refund R-9 issued")],
    )
    billing = agent(
        "billing",
        scripted(
            "billing",
            [call("get_invoice", query="C-1")],
            [call("transfer_to_refunds", request="refund INV-7")],
        ),
        [plain_tool("billing", "get_invoice", "INV-7: 40 EUR, paid twice")],
        [handoff_to(refunds)],
    )
    triage = agent(
        "triage",
        scripted(
            "triage",
            [call("lookup_customer", query="Ada")],
            [call("transfer_to_billing", request="charged twice")],
        ),
        [plain_tool("triage", "lookup_customer", "C-1, Ada")],
        [handoff_to(billing)],
    )
    recorder.start()
    result = await triage.run("I was charged twice.")
    assert result.output == "Refund R-9 issued for INV-7.", result.output
    check(
        [
            ("triage", "lookup_customer", True),
            ("billing", "get_invoice", True),
            ("refunds", "issue_refund", True),
        ],
        ["refunds"],
    )
    truth = Truth()
    t = truth.agent("triage")
    truth.tool(t, "lookup_customer")
    b = truth.agent("billing", t, "handoff", "transfer_to_billing")
    truth.tool(b, "get_invoice")
    r = truth.agent("refunds", b, "handoff", "transfer_to_refunds")
    truth.tool(r, "issue_refund")
    recorder.write(
        "handoff_chain",
        note=(
            "No native handoff: each handoff is an output function (ToolOutput named "
            "transfer_to_<agent>) that runs the next agent; its answer is the run's output, "
            "so the caller never speaks again. The target runs inside the caller's span."
        ),
        result={"final_output": result.output, "last_agent": "refunds", "raised": None},
        run_ok=True,
        truth=truth,
    )


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent(
        "specialist",
        scripted(
            "specialist",
            [call("search_kb", query="router")],
            [TextPart("Reset the router (KB-12).")],
        ),
        [plain_tool("specialist", "search_kb", "KB-12: reset the router")],
    )
    support = agent(
        "support",
        scripted(
            "support",
            [call("ask_specialist", request="The router blinks red.")],
            [TextPart("The specialist says: reset the router (KB-12).")],
        ),
        [agent_tool(specialist, "ask_specialist")],
    )
    triage = agent(
        "triage",
        scripted("triage", [call("transfer_to_support", request="router blinks red")]),
        [],
        [handoff_to(support)],
    )
    recorder.start()
    result = await triage.run("My router blinks red.")
    assert result.output == "The specialist says: reset the router (KB-12).", result.output
    check([("specialist", "search_kb", True)], ["specialist", "support"])
    truth = Truth()
    t = truth.agent("triage")
    s = truth.agent("support", t, "handoff", "transfer_to_support")
    k = truth.agent("specialist", s, "delegate", "ask_specialist")
    truth.tool(k, "search_kb")
    recorder.write(
        "handoff_then_tool_agent",
        note=(
            "triage hands off through an output function (transfer_to_support); support calls "
            "specialist through a plain tool (ask_specialist) whose body runs the agent."
        ),
        result={"final_output": result.output, "last_agent": "support", "raised": None},
        run_ok=True,
        truth=truth,
    )


async def tool_raises(recorder: Recorder) -> None:
    billing = agent(
        "billing",
        scripted("billing", [call("charge_card", query="C-1")]),
        [plain_tool("billing", "charge_card", "", raises="card declined")],
    )
    triage = agent(
        "triage",
        scripted("triage", [call("transfer_to_billing", request="charge the card")]),
        [],
        [handoff_to(billing)],
    )
    recorder.start()
    try:
        await triage.run("Charge my card.")
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("the run was meant to raise")
    assert raised == "RuntimeError: card declined", raised
    check([("billing", "charge_card", False)], [])
    truth = Truth()
    t = truth.agent("triage")
    b = truth.agent("billing", t, "handoff", "transfer_to_billing")
    truth.tool(b, "charge_card", ok=False)
    truth.failed(t, b)
    recorder.write(
        "tool_raises",
        note=(
            "billing's tool raises; Pydantic AI lets a tool's exception propagate (only ModelRetry "
            "goes back to the model), out of billing, out of the handoff's output function and "
            "out of triage: the run raises, and both invocations raised."
        ),
        result={"final_output": None, "last_agent": "billing", "raised": raised},
        run_ok=False,
        truth=truth,
    )


async def parallel_delegates(recorder: Recorder) -> None:
    def delegate(
        name: str, tool: str, answer: str, *, raises: str | None = None
    ) -> Agent[None, str]:
        turns: list[list[Any]] = [[call(tool, query="Lisbon")]]
        if raises is None:
            turns.append([TextPart(answer)])
        return agent(name, scripted(name, *turns), [plain_tool(name, tool, answer, raises=raises)])

    helpers = [
        delegate("flights", "search_flights", "TP-101 at 9:00"),
        delegate("hotels", "search_hotels", "Hotel Tejo"),
        delegate("cars", "rent_car", "", raises="no cars left"),
    ]
    coordinator = agent(
        "coordinator",
        scripted(
            "coordinator",
            [call(f"ask_{h.name}", request="Lisbon") for h in helpers],
            [TextPart("Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented.")],
        ),
        [agent_tool(h, f"ask_{h.name}", recover=True) for h in helpers],
    )
    recorder.start()
    result = await coordinator.run("Plan my Lisbon trip.")
    assert result.output.startswith("Booked TP-101"), result.output
    # The helpers run concurrently: which of them answers first varies.
    assert sorted(SPOKE[:2]) == ["flights", "hotels"] and SPOKE[2:] == ["coordinator"], SPOKE
    check(
        [
            ("flights", "search_flights", True),
            ("hotels", "search_hotels", True),
            ("cars", "rent_car", False),
        ],
        list(SPOKE),
    )
    truth = Truth()
    c = truth.agent("coordinator")
    plain = {"flights": "search_flights", "hotels": "search_hotels", "cars": "rent_car"}
    for name in in_start_order(list(plain)):
        tool = plain[name]
        i = truth.agent(name, c, "delegate", f"ask_{name}")
        truth.tool(i, tool, ok=name != "cars")
        if name == "cars":
            truth.failed(i)
    recorder.write(
        "parallel_delegates",
        note=(
            "The coordinator calls three agent tools in one response; Pydantic AI runs them "
            "concurrently. cars' tool raises out of cars; ask_cars turns that into ModelRetry "
            "(Pydantic AI's way to tell the model a tool failed) and the coordinator answers."
        ),
        result={"final_output": result.output, "last_agent": "coordinator", "raised": None},
        run_ok=True,
        truth=truth,
    )


RAN: list[str] = []  # the agents whose run began, in order (the app's own log)
DESK: dict[str, Agent[None, str]] = {}  # the agents of a loop, by name: they call each other


def looping(name: str, target: str, *, times: int = 40, then: str | None = None,
            via: str = "handoff", handle: bool = False) -> Agent[None, str]:  # fmt: skip
    """An agent that hands to ``target`` (``via`` "handoff", an output function) or asks
    it (``via`` "tool") ``times`` times, then answers ``then``. The target is looked up
    when called, so agents can call each other. With ``handle``, a handoff that raises
    UsageLimitExceeded is caught and answered with an apology."""
    node = f"transfer_to_{target}" if via == "handoff" else f"ask_{target}"

    async def run_target(ctx: RunContext[None], request: str) -> str:
        RAN.append(target)
        try:
            result = await DESK[target].run(request, usage=ctx.usage, usage_limits=LIMITS[0])
        except UsageLimitExceeded:
            if not handle:
                raise
            return "Sorry, we could not finish; an agent will call you back."
        return result.output

    turns = [[call(node, request="Who handles this?")] for _ in range(times)]
    model = scripted(name, *turns, *([[TextPart(then)]] if then else []))
    if via == "handoff":
        made = agent(name, model, [], [ToolOutput(run_target, name=node)])
    else:
        made = agent(name, model, [Tool(run_target, name=node, description=f"Ask {target}.")])
    DESK[name] = made
    return made


LIMITS: list[UsageLimits] = [UsageLimits()]


async def run_loop(first: Agent[None, str], limit: int | None) -> tuple[Any, str | None]:
    """Run ``first`` under ``request_limit`` (Pydantic AI's default, 50, without it)."""
    LIMITS[0] = UsageLimits(request_limit=limit) if limit else UsageLimits()
    RAN.clear()
    RAN.append(first.name)
    try:
        return await first.run("Who handles my invoice?", usage_limits=LIMITS[0]), None
    except UsageLimitExceeded as exc:
        return None, f"{type(exc).__name__}: {exc}"


def chain_truth(ran: list[str], via: str, failed_from: int | None) -> Truth:
    """Each run inside its caller's output function (or tool); from ``failed_from`` on, the
    runs raised (the limit struck in the innermost and went out through its callers)."""
    truth = Truth()
    for n, name in enumerate(ran):
        if n == 0:
            truth.agent(name)
        else:
            node = f"transfer_to_{name}" if via == "handoff" else f"ask_{name}"
            truth.agent(name, n - 1, "handoff" if via == "handoff" else "delegate", node)
    if failed_from is not None:
        truth.failed(*range(failed_from, len(ran)))
    return truth


async def run_and_write(recorder: Recorder, scenario: str, agents: list[Agent[None, str]], limit: int,
                  ring: list[str], via: str, note: str) -> None:  # fmt: skip
    recorder.start()
    result, raised = await run_loop(agents[0], limit)
    assert result is None and raised is not None, raised
    assert raised.startswith("UsageLimitExceeded: ") and f"request_limit of {limit}" in raised
    ran = list(RAN)
    assert ran == (ring * limit)[: limit + 1], ran
    circle, closures = circle_of(RAN)
    recorder.write(
        scenario,
        note=note,
        result={"final_output": None, "last_agent": RAN[-1], "raised": raised},
        run_ok=False,
        truth=chain_truth(RAN, via, 0),
        loop=Loop("failed:recursion", circle, "UsageLimitExceeded", closures),
    )
    SPOKE.clear()


async def pingpong_limit(recorder: Recorder) -> None:
    agents = [looping("triage", "billing"), looping("billing", "triage")]
    await run_and_write(recorder, "pingpong_limit", agents, 6, ["triage", "billing"], "handoff",
                  "triage and billing hand off to each other (output functions that run the "
                  "other agent, sharing the usage and UsageLimits(request_limit=6)) until the "
                  "seventh agent run's request would exceed the request_limit: "
                  "UsageLimitExceeded, raised in that run and out through every run around it.")  # fmt: skip


async def ring_limit(recorder: Recorder) -> None:
    agents = [looping("triage", "billing"), looping("billing", "refunds"),
              looping("refunds", "triage")]  # fmt: skip
    await run_and_write(recorder, "ring_limit", agents, 6, ["triage", "billing", "refunds"], "handoff",
                  "A ring of three handoffs (triage -> billing -> refunds -> triage ...) until "
                  "UsageLimits(request_limit=6) raises UsageLimitExceeded in the seventh run.")  # fmt: skip


async def delegation_limit(recorder: Recorder) -> None:
    agents = [looping("planner", "critic", via="tool"), looping("critic", "planner", via="tool")]
    await run_and_write(recorder, "delegation_limit", agents, 6, ["planner", "critic"], "tool",
                  "Mutual delegation: planner asks critic through a tool whose body runs critic, "
                  "critic asks planner the same way, until UsageLimits(request_limit=6) raises "
                  "UsageLimitExceeded in the seventh run, out through every tool and run.")  # fmt: skip


async def handled_limit(recorder: Recorder) -> None:
    agents = [looping("triage", "billing", handle=True), looping("billing", "triage", handle=True)]
    recorder.start()
    result, raised = await run_loop(agents[0], 4)
    answer = "Sorry, we could not finish; an agent will call you back."
    assert raised is None and result.output == answer, (raised, result)
    assert RAN == ["triage", "billing"] * 2 + ["triage"], RAN
    circle, closures = circle_of(RAN)
    recorder.write(
        "handled_limit",
        note="triage and billing hand off to each other until UsageLimits(request_limit=4) "
        "raises UsageLimitExceeded in the fifth run; the handoff that ran it (billing's output "
        "function) catches it and answers with an apology, which every run around it returns: "
        "the run ends normally.",
        result={"final_output": answer, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=chain_truth(RAN, "handoff", len(RAN) - 1),
        loop=Loop("degraded", circle, "UsageLimitExceeded", closures),
    )


async def loop_ok(recorder: Recorder) -> None:
    agents = [looping("triage", "billing", times=3, then="Your invoice INV-7 is 40 EUR."),
              looping("billing", "triage", times=3)]  # fmt: skip
    recorder.start()
    result, raised = await run_loop(agents[0], None)
    assert raised is None and result.output == "Your invoice INV-7 is 40 EUR.", raised
    assert RAN == ["triage", "billing"] * 3 + ["triage"], RAN
    circle, closures = circle_of(RAN)
    assert (circle, closures) == ("billing -> triage -> billing", 3)
    recorder.write(
        "loop_ok",
        note="triage and billing hand off to each other three times each (output functions), "
        "under the default request_limit (50); the seventh run, triage's, answers, and every "
        "run around it returns that answer.",
        result={"final_output": result.output, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=chain_truth(RAN, "handoff", None),
        loop=Loop("ok", circle, None, closures),
    )
    SPOKE.clear()


async def main() -> None:
    provider, exporter = memory_provider("pydantic-ai-recording")
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    recorder = Recorder(
        "pydantic_ai", "pydantic-ai-slim", "native OpenTelemetry (Agent.instrument_all)", exporter
    )
    scenarios: list[Callable[[Recorder], Any]] = [
        handoff_chain,
        handoff_then_tool_agent,
        tool_raises,
        parallel_delegates,
        pingpong_limit,
        ring_limit,
        delegation_limit,
        handled_limit,
        loop_ok,
    ]
    for scenario in recorder.chosen(scenarios):
        await scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
