"""Record Google ADK with its native OpenTelemetry spans, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/google_adk/bin/python tests/frameworks/record_google_adk.py``.
Each agent's model is a ``BaseLlm`` (ADK's own model interface) that plays the
turns written below; every connection is refused. Handoffs are ADK's own
``transfer_to_agent`` to a sub-agent; agent-as-tool is ``AgentTool``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncGenerator
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

from google.adk.agents import LlmAgent, LoopAgent, RunConfig  # noqa: E402
from google.adk.agents.invocation_context import LlmCallsLimitExceededError  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import FunctionTool  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry import trace  # noqa: E402
from pydantic import Field  # noqa: E402

# ADK logs every failed node with its traceback; the failures here are on purpose (set
# after the imports, which set up ADK's loggers).
logging.getLogger("google_adk").setLevel(logging.CRITICAL)

LOG: list[tuple[str, str, bool]] = []  # (agent, tool, ok): what the plain tools saw happen
SEEN: dict[str, list[str]] = {}  # agent -> the function responses its model was given


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def say(text: str) -> types.Part:
    return types.Part(text=text)


class ScriptedLlm(BaseLlm):
    """Answers each request with the next turn's parts."""

    turns: list[list[Any]] = Field(default_factory=list)
    agent: str = ""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        started(self.agent)
        seen = SEEN.setdefault(self.agent, [])
        for content in llm_request.contents or []:
            for part in content.parts or []:
                if part.function_response is not None:
                    seen.append(str(part.function_response.response))
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        parts = self.turns.pop(0)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=120, candidates_token_count=30, total_token_count=150
        )
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def model(agent: str, *turns: list[Any]) -> ScriptedLlm:
    return ScriptedLlm(model=f"scripted-{agent}", turns=list(turns), agent=agent)


def plain_tool(agent: str, name: str, answer: str, *, raises: str | None = None) -> FunctionTool:
    """A plain tool that logs its call; with ``raises`` it raises."""

    def run(query: str) -> str:
        LOG.append((agent, name, raises is None))
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    run.__name__ = name
    run.__doc__ = f"{name} for {agent}."
    return FunctionTool(run)


def check(expected: list[tuple[str, str, bool]]) -> None:
    assert sorted(LOG) == sorted(expected), LOG
    LOG.clear()


async def run(root: LlmAgent, text: str) -> tuple[str | None, str | None]:
    """Run ``root`` to its end; return the last text answer and the agent that gave it."""
    runner = InMemoryRunner(agent=root, app_name="recording")
    session = await runner.session_service.create_session(app_name="recording", user_id="u1")
    final: tuple[str | None, str | None] = (None, None)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        for part in (event.content.parts or []) if event.content else []:
            if part.text:
                final = (part.text, event.author)
    return final


async def handoff_chain(recorder: Recorder) -> None:
    refunds = LlmAgent(
        name="refunds",
        model=model(
            "refunds", [call("issue_refund", query="INV-7")], [say("Refund R-9 issued for INV-7.")]
        ),
        instruction="Issue refunds.",
        tools=[plain_tool("refunds", "issue_refund", "refund R-9 issued")],
    )
    billing = LlmAgent(
        name="billing",
        model=model(
            "billing",
            [call("get_invoice", query="C-1")],
            [call("transfer_to_agent", agent_name="refunds")],
        ),
        instruction="Handle invoices.",
        tools=[plain_tool("billing", "get_invoice", "INV-7: 40 EUR, paid twice")],
        sub_agents=[refunds],
    )
    triage = LlmAgent(
        name="triage",
        model=model(
            "triage",
            [call("lookup_customer", query="Ada")],
            [call("transfer_to_agent", agent_name="billing")],
        ),
        instruction="Route the customer.",
        tools=[plain_tool("triage", "lookup_customer", "C-1, Ada")],
        sub_agents=[billing],
    )
    recorder.start()
    text, author = await run(triage, "I was charged twice.")
    assert (text, author) == ("Refund R-9 issued for INV-7.", "refunds"), (text, author)
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
    b = truth.agent("billing", t, "handoff", "transfer_to_agent")
    truth.tool(b, "get_invoice")
    r = truth.agent("refunds", b, "handoff", "transfer_to_agent")
    truth.tool(r, "issue_refund")
    recorder.write(
        "handoff_chain",
        note="Handoffs are ADK's transfer_to_agent to a sub-agent (one tool name for every target).",
        result={"final_output": text, "last_agent": author, "raised": None},
        run_ok=True,
        truth=truth,
    )


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = LlmAgent(
        name="specialist",
        model=model(
            "specialist", [call("search_kb", query="router")], [say("Reset the router (KB-12).")]
        ),
        instruction="Answer from the knowledge base.",
        description="Knows the knowledge base.",
        tools=[plain_tool("specialist", "search_kb", "KB-12: reset the router")],
    )
    support = LlmAgent(
        name="support",
        model=model(
            "support",
            [call("specialist", request="The router blinks red.")],
            [say("The specialist says: reset the router (KB-12).")],
        ),
        instruction="Solve it, ask the specialist.",
        tools=[AgentTool(agent=specialist)],
    )
    triage = LlmAgent(
        name="triage",
        model=model("triage", [call("transfer_to_agent", agent_name="support")]),
        instruction="Route the customer.",
        sub_agents=[support],
    )
    recorder.start()
    text, author = await run(triage, "My router blinks red.")
    assert (text, author) == ("The specialist says: reset the router (KB-12).", "support"), (
        text,
        author,
    )
    assert any("KB-12" in s for s in SEEN["support"]), SEEN["support"]
    check([("specialist", "search_kb", True)])
    truth = Truth()
    t = truth.agent("triage")
    s = truth.agent("support", t, "handoff", "transfer_to_agent")
    k = truth.agent("specialist", s, "delegate", "specialist")
    truth.tool(k, "search_kb")
    recorder.write(
        "handoff_then_tool_agent",
        note="triage transfers to support (transfer_to_agent); support calls specialist through AgentTool (the tool is named after the agent).",
        result={"final_output": text, "last_agent": author, "raised": None},
        run_ok=True,
        truth=truth,
    )


async def tool_raises(recorder: Recorder) -> None:
    billing = LlmAgent(
        name="billing",
        model=model("billing", [call("charge_card", query="C-1")]),
        instruction="Charge the card.",
        tools=[plain_tool("billing", "charge_card", "", raises="card declined")],
    )
    triage = LlmAgent(
        name="triage",
        model=model("triage", [call("transfer_to_agent", agent_name="billing")]),
        instruction="Route the customer.",
        sub_agents=[billing],
    )
    recorder.start()
    try:
        await run(triage, "Charge my card.")
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("the run was meant to raise")
    assert raised == "RuntimeError: card declined", raised
    check([("billing", "charge_card", False)])
    truth = Truth()
    t = truth.agent("triage")
    b = truth.agent("billing", t, "handoff", "transfer_to_agent")
    truth.tool(b, "charge_card", ok=False)
    truth.failed(b)
    recorder.write(
        "tool_raises",
        note=(
            "billing's tool raises; ADK lets it propagate out of the runner (the workflow "
            "reports DynamicNodeFailError in its log, the runner raises the tool's own "
            "RuntimeError): the run raises. triage's agent span had already ended (ADK runs "
            "the transfer target as the workflow's next node) without raising."
        ),
        result={"final_output": None, "last_agent": "billing", "raised": raised},
        run_ok=False,
        truth=truth,
    )


async def recover(
    tool: Any, args: dict[str, Any], tool_context: Any, error: Exception
) -> dict[str, Any]:
    """The coordinator's on_tool_error_callback: a failed helper becomes an error result."""
    return {"error": f"{tool.name} failed: {error}"}


async def parallel_delegates(recorder: Recorder) -> None:
    def delegate(name: str, tool: str, answer: str, *, raises: str | None = None) -> LlmAgent:
        turns: list[list[Any]] = [[call(tool, query="Lisbon")]]
        if raises is None:
            turns.append([say(answer)])
        return LlmAgent(
            name=name,
            model=model(name, *turns),
            instruction=f"Book {name}.",
            description=f"Books {name}.",
            tools=[plain_tool(name, tool, answer, raises=raises)],
        )

    helpers = [
        delegate("flights", "search_flights", "TP-101 at 9:00"),
        delegate("hotels", "search_hotels", "Hotel Tejo"),
        delegate("cars", "rent_car", "", raises="no cars left"),
    ]
    coordinator = LlmAgent(
        name="coordinator",
        model=model(
            "coordinator",
            [call(h.name, request="Lisbon") for h in helpers],
            [say("Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented.")],
        ),
        instruction="Plan the trip with your helpers.",
        tools=[AgentTool(agent=h) for h in helpers],
        on_tool_error_callback=recover,
    )
    recorder.start()
    text, author = await run(coordinator, "Plan my Lisbon trip.")
    assert author == "coordinator" and text and text.startswith("Booked TP-101"), (text, author)
    assert any("no cars left" in s for s in SEEN["coordinator"]), SEEN["coordinator"]
    check(
        [
            ("flights", "search_flights", True),
            ("hotels", "search_hotels", True),
            ("cars", "rent_car", False),
        ]
    )
    truth = Truth()
    c = truth.agent("coordinator")
    plain = {"flights": "search_flights", "hotels": "search_hotels", "cars": "rent_car"}
    for name in in_start_order(list(plain)):
        tool = plain[name]
        i = truth.agent(name, c, "delegate", name)
        truth.tool(i, tool, ok=name != "cars")
        if name == "cars":
            truth.failed(i)
    recorder.write(
        "parallel_delegates",
        note=(
            "The coordinator calls three AgentTools in one response; ADK runs the calls "
            "concurrently. cars' tool raises out of cars; the coordinator's "
            "on_tool_error_callback turns the failed AgentTool into an error result and the "
            "coordinator answers."
        ),
        result={"final_output": text, "last_agent": author, "raised": None},
        run_ok=True,
        truth=truth,
    )


APP: list[Any] = []  # the app's own tracer, around a run it handles


async def events_of(root: Any, text: str, config: RunConfig | None = None,
                    seen: list[Any] | None = None) -> list[Any]:  # fmt: skip
    """Run ``root``; the session's events, as the runner gave them (into ``seen`` too, so a
    run that raises keeps those it gave before)."""
    runner = InMemoryRunner(agent=root, app_name="recording")
    session = await runner.session_service.create_session(app_name="recording", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text=text)])
    events = seen if seen is not None else []
    async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message,
                                        run_config=config or RunConfig()):  # fmt: skip
        events.append(event)
    return events


def sequence_of(first: str, events: list[Any]) -> list[str]:
    """The agents that held control, from the events: the first, then each transfer's target
    (``EventActions.transfer_to_agent``)."""
    return [first, *(e.actions.transfer_to_agent for e in events if e.actions.transfer_to_agent)]


def transfers(name: str, target: str, times: int = 40, then: str | None = None) -> LlmAgent:
    """An agent whose model transfers to ``target`` ``times`` times, then answers ``then``."""
    turns = [[call("transfer_to_agent", agent_name=target)] for _ in range(times)]
    return LlmAgent(name=name, model=model(name, *turns, *([[say(then)]] if then else [])),
                    instruction=f"You are {name}.")  # fmt: skip


def transfer_truth(ran: list[str], failed: bool) -> Truth:
    """Each agent transferred to the next (transfer_to_agent): the runner runs the target
    when the transferring agent's run has ended, so a limit raised fails only the last."""
    truth = Truth()
    for n, name in enumerate(ran):
        if n == 0:
            truth.agent(name)
        else:
            truth.agent(name, n - 1, "handoff", "transfer_to_agent")
    if failed:
        truth.failed(len(ran) - 1)
    return truth


async def limited(root: LlmAgent, limit: int) -> tuple[str, list[str]]:
    seen: list[Any] = []
    try:
        await events_of(root, "Who handles my invoice?", RunConfig(max_llm_calls=limit), seen)
    except LlmCallsLimitExceededError as exc:
        return f"{type(exc).__name__}: {exc}", sequence_of(root.name, seen)
    raise AssertionError("the run was meant to exceed max_llm_calls")


async def pingpong_limit(recorder: Recorder) -> None:
    billing = transfers("billing", "triage")
    triage = transfers("triage", "billing")
    triage.sub_agents = [billing]
    billing.parent_agent = triage
    recorder.start()
    raised, ran = await limited(triage, 6)
    assert raised == "LlmCallsLimitExceededError: Max number of llm calls limit of `6` exceeded"
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    recorder.write(
        "pingpong_limit",
        note="triage transfers to its sub-agent billing, billing back to its parent "
        "(transfer_to_agent) and so on, until RunConfig(max_llm_calls=6): the seventh model "
        "call raises LlmCallsLimitExceededError in triage, out of runner.run_async. The "
        "sequence is the events' transfer_to_agent actions.",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=transfer_truth(ran, True),
        loop=Loop("failed:recursion", circle, "LlmCallsLimitExceededError", closures),
    )


async def ring_limit(recorder: Recorder) -> None:
    billing, refunds = transfers("billing", "refunds"), transfers("refunds", "triage")
    triage = LlmAgent(name="triage", instruction="You are triage.", sub_agents=[billing, refunds],
                      model=model("triage", *[[call("transfer_to_agent", agent_name="billing")]] * 40))  # fmt: skip
    recorder.start()
    raised, ran = await limited(triage, 7)
    assert raised.startswith("LlmCallsLimitExceededError: "), raised
    assert ran == ["triage", "billing", "refunds"] * 2 + ["triage", "billing"], ran
    circle, closures = circle_of(ran)
    recorder.write(
        "ring_limit",
        note="A ring of three: triage transfers to billing, billing to its peer refunds, "
        "refunds to its parent triage, until RunConfig(max_llm_calls=7) raises "
        "LlmCallsLimitExceededError at the eighth model call, billing's.",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=transfer_truth(ran, True),
        loop=Loop("failed:recursion", circle, "LlmCallsLimitExceededError", closures),
    )


async def handled_limit(recorder: Recorder) -> None:
    billing = transfers("billing", "triage")
    triage = transfers("triage", "billing")
    triage.sub_agents = [billing]
    billing.parent_agent = triage
    recorder.start()
    # The app's own span holds the run; the app catches the limit and answers.
    with APP[0].start_as_current_span("POST /chat"):
        raised, ran = await limited(triage, 4)
    assert ran == ["triage", "billing"] * 2 + ["triage"], ran
    circle, closures = circle_of(ran)
    recorder.write(
        "handled_limit",
        note="triage and billing transfer to each other until RunConfig(max_llm_calls=4) "
        "raises LlmCallsLimitExceededError out of runner.run_async; the app catches it and "
        "answers with an apology, so the request ends normally. The app's span (POST /chat, "
        "ended well) is the parent of ADK's spans.",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=transfer_truth(ran, True),
        loop=Loop("degraded", circle, "LlmCallsLimitExceededError", closures),
    )


async def ring_silent(recorder: Recorder) -> None:
    def step(name: str, text: str) -> LlmAgent:
        return LlmAgent(name=name, model=model(name, *[[say(text)]] * 10),
                        instruction=f"You are {name}.")  # fmt: skip

    loop = LoopAgent(name="desk", max_iterations=3,
                     sub_agents=[step("billing", "Ask refunds."), step("refunds", "Ask billing.")])  # fmt: skip
    recorder.start()
    events = await events_of(loop, "Who handles my refund?")
    ran = [e.author for e in events if e.content and e.content.parts]
    assert ran == ["billing", "refunds"] * 3, ran
    assert not any(e.actions.escalate for e in events)
    circle, closures = circle_of(ran)
    truth = Truth()  # the LoopAgent is an agent of ADK's that runs its sub-agents in turn
    desk = truth.agent("desk")
    for name in ran:
        truth.agent(name, desk, "delegate", None)
    recorder.write(
        "ring_silent",
        note="A LoopAgent (max_iterations=3) over billing and refunds, neither of which "
        "escalates: the loop runs them in turn three times and stops, with no error and no "
        "answer to the task. The sequence is the events' authors (the LoopAgent writes none).",
        result={
            "final_output": events[-1].content.parts[0].text,
            "last_agent": ran[-1],
            "raised": None,
        },
        run_ok=True,
        truth=truth,
        loop=Loop("degraded", circle, "max_iterations", closures),
    )


async def loop_ok(recorder: Recorder) -> None:
    billing = transfers("billing", "triage", 3)
    triage = transfers("triage", "billing", 3, "Your invoice INV-7 is 40 EUR.")
    triage.sub_agents = [billing]
    billing.parent_agent = triage
    recorder.start()
    events = await events_of(triage, "How much is my invoice?")
    ran = sequence_of("triage", events)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    text = events[-1].content.parts[0].text
    assert text == "Your invoice INV-7 is 40 EUR.", text
    circle, closures = circle_of(ran)
    recorder.write(
        "loop_ok",
        note="triage and billing transfer to each other three times each (transfer_to_agent), "
        "under the default max_llm_calls (500); then triage answers.",
        result={"final_output": text, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=transfer_truth(ran, False),
        loop=Loop("ok", circle, None, closures),
    )


async def main() -> None:
    provider, exporter = memory_provider("google-adk-recording")
    trace.set_tracer_provider(provider)  # ADK's spans go to the global provider
    APP.append(provider.get_tracer("app"))
    recorder = Recorder("google_adk", "google-adk", "native OpenTelemetry", exporter)
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, parallel_delegates, pingpong_limit,
         ring_limit, handled_limit, ring_silent, loop_ok]
    ):  # fmt: skip
        SEEN.clear()
        await scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
