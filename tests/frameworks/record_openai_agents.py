"""Record the OpenAI Agents SDK, through openinference-instrumentation-openai-agents, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/openai_agents/bin/python tests/frameworks/record_openai_agents.py``.
Each agent has a scripted model built on the SDK's own ``Model`` interface: its
turns are written out below, and nothing is sent anywhere (every connection is
refused; the SDK's own trace exporter is replaced by OpenInference's processor).
"""

from __future__ import annotations

import asyncio
import json
import sys
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
    instrumented_by,
    memory_provider,
    started,
)

go_offline()

from agents import Agent, MaxTurnsExceeded, Runner, function_tool, generation_span  # noqa: E402
from agents.items import HandoffOutputItem, ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

_ids = count(1)
APP: list[Any] = []  # the app's own tracer, around a run it handles
LOG: list[tuple[str, str, bool]] = []  # (agent, tool, ok): what the plain tools saw happen


def call(name: str, **arguments: Any) -> ResponseFunctionToolCall:
    """A function call the scripted model makes."""
    n = next(_ids)
    return ResponseFunctionToolCall(
        id=f"fc_{n}",
        call_id=f"call_{n}",
        name=name,
        arguments=json.dumps(arguments),
        type="function_call",
        status="completed",
    )


def say(text: str) -> ResponseOutputMessage:
    """A final answer of the scripted model."""
    return ResponseOutputMessage(
        id=f"msg_{next(_ids)}",
        role="assistant",
        status="completed",
        type="message",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
    )


class ScriptedModel(Model):
    """Answers each turn with the next item of its script (one list of outputs a turn)."""

    def __init__(self, name: str, *turns: list[Any]) -> None:
        self.name = name
        self.turns = list(turns)
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        started(self.name.removeprefix("scripted-"))
        if not self.turns:
            raise AssertionError("the scripted model ran out of turns")
        usage = Usage(requests=1, input_tokens=120, output_tokens=30, total_tokens=150)
        output = self.turns.pop(0)
        # The SDK's own model classes open a generation span around the call; so does this one,
        # so the recording has the model turns with their tokens, as a real run would.
        with generation_span(model=self.name, model_config={}) as span:
            span.span_data.input = (
                list(input) if isinstance(input, list) else [{"role": "user", "content": input}]
            )
            span.span_data.output = [item.model_dump() for item in output]
            span.span_data.usage = {"input_tokens": 120, "output_tokens": 30}
        return ModelResponse(output=output, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the recordings do not stream")

    def saw(self, text: str) -> bool:
        """Whether the text was in any input this model was given."""
        return any(text in json.dumps(i, default=str) for i in self.inputs)


def plain_tool(agent: str, name: str, answer: str, *, raises: str | None = None) -> Any:
    """A plain tool that logs its call; with ``raises``, it raises and the SDK lets it propagate."""

    def run(query: str) -> str:
        LOG.append((agent, name, raises is None))
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    run.__name__ = name
    run.__doc__ = f"{name} for {agent}."
    # failure_error_function=None: a raising tool raises out of its agent (the default
    # would hand the error text back to the model).
    fail = {"failure_error_function": None} if raises is not None else {}
    return function_tool(run, name_override=name, **fail)


def check_log(expected: list[tuple[str, str, bool]]) -> None:
    got = sorted(LOG)
    assert got == sorted(expected), got
    LOG.clear()


async def handoff_chain(recorder: Recorder) -> None:
    refunds = Agent(
        name="refunds",
        instructions="Issue refunds.",
        tools=[plain_tool("refunds", "issue_refund", "refund R-9 issued")],
        model=ScriptedModel(
            "scripted-refunds",
            [call("issue_refund", query="INV-7")],
            [say("Refund R-9 issued for INV-7.")],
        ),
    )
    billing = Agent(
        name="billing",
        instructions="Handle invoices.",
        tools=[plain_tool("billing", "get_invoice", "INV-7: 40 EUR, paid twice")],
        handoffs=[refunds],
        model=ScriptedModel(
            "scripted-billing", [call("get_invoice", query="C-1")], [call("transfer_to_refunds")]
        ),
    )
    triage = Agent(
        name="triage",
        instructions="Route the customer.",
        tools=[plain_tool("triage", "lookup_customer", "C-1, Ada")],
        handoffs=[billing],
        model=ScriptedModel(
            "scripted-triage", [call("lookup_customer", query="Ada")], [call("transfer_to_billing")]
        ),
    )
    recorder.start()
    result = await Runner.run(triage, "I was charged twice.")
    assert result.final_output == "Refund R-9 issued for INV-7.", result.final_output
    assert result.last_agent.name == "refunds"
    check_log(
        [
            ("triage", "lookup_customer", True),
            ("billing", "get_invoice", True),
            ("refunds", "issue_refund", True),
        ]
    )
    truth = Truth()
    t = truth.agent("triage")
    truth.tool(t, "lookup_customer")
    b = truth.agent("billing", t, "handoff", "handoff to billing")
    truth.tool(b, "get_invoice")
    r = truth.agent("refunds", b, "handoff", "handoff to refunds")
    truth.tool(r, "issue_refund")
    recorder.write(
        "handoff_chain",
        note=(
            "Handoffs are the SDK's own (Agent.handoffs; the model calls transfer_to_<agent>, which "
            "OpenInference records as a TOOL span named 'handoff to <agent>': that is the node)."
            " Each agent calls one plain tool first."
        ),
        result={"final_output": result.final_output, "last_agent": "refunds", "raised": None},
        run_ok=True,
        truth=truth,
    )


async def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = Agent(
        name="specialist",
        instructions="Answer from the knowledge base.",
        tools=[plain_tool("specialist", "search_kb", "KB-12: reset the router")],
        model=ScriptedModel(
            "scripted-specialist",
            [call("search_kb", query="router")],
            [say("Reset the router (KB-12).")],
        ),
    )
    support_model = ScriptedModel(
        "scripted-support",
        [call("ask_specialist", input="The router blinks red.")],
        [say("The specialist says: reset the router (KB-12).")],
    )
    support = Agent(
        name="support",
        instructions="Solve it, ask the specialist.",
        tools=[
            specialist.as_tool(tool_name="ask_specialist", tool_description="Ask the specialist.")
        ],
        model=support_model,
    )
    triage = Agent(
        name="triage",
        instructions="Route the customer.",
        handoffs=[support],
        model=ScriptedModel("scripted-triage", [call("transfer_to_support")]),
    )
    recorder.start()
    result = await Runner.run(triage, "My router blinks red.")
    assert result.final_output == "The specialist says: reset the router (KB-12).", (
        result.final_output
    )
    assert result.last_agent.name == "support"
    assert support_model.saw("Reset the router (KB-12).")  # the specialist's answer came back
    check_log([("specialist", "search_kb", True)])
    truth = Truth()
    t = truth.agent("triage")
    s = truth.agent("support", t, "handoff", "handoff to support")
    k = truth.agent("specialist", s, "delegate", "ask_specialist")
    truth.tool(k, "search_kb")
    recorder.write(
        "handoff_then_tool_agent",
        note="triage hands off to support (Agent.handoffs); support calls specialist through Agent.as_tool.",
        result={"final_output": result.final_output, "last_agent": "support", "raised": None},
        run_ok=True,
        truth=truth,
    )


async def tool_raises(recorder: Recorder) -> None:
    billing = Agent(
        name="billing",
        instructions="Charge the card.",
        tools=[plain_tool("billing", "charge_card", "", raises="card declined")],
        model=ScriptedModel("scripted-billing", [call("charge_card", query="C-1")]),
    )
    triage = Agent(
        name="triage",
        instructions="Route the customer.",
        handoffs=[billing],
        model=ScriptedModel("scripted-triage", [call("transfer_to_billing")]),
    )
    recorder.start()
    try:
        await Runner.run(triage, "Charge my card.")
    except Exception as exc:  # the SDK's own exception, whatever it wraps
        raised = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("the run was meant to raise")
    assert "card declined" in raised, raised
    check_log([("billing", "charge_card", False)])
    truth = Truth()
    t = truth.agent("triage")
    b = truth.agent("billing", t, "handoff", "handoff to billing")
    truth.tool(b, "charge_card", ok=False)
    truth.failed(b)
    recorder.write(
        "tool_raises",
        note=(
            "billing's tool raises (function_tool with failure_error_function=None, so the SDK "
            "does not turn the error into a tool result); the run raises. triage had already "
            "handed off and ended without raising."
        ),
        result={"final_output": None, "last_agent": "billing", "raised": raised},
        run_ok=False,
        truth=truth,
    )


async def parallel_delegates(recorder: Recorder) -> None:
    def delegate(name: str, tool: str, answer: str, *, raises: str | None = None) -> Agent[Any]:
        turns: list[list[Any]] = [[call(tool, query="Lisbon")]]
        if raises is None:
            turns.append([say(answer)])
        return Agent(
            name=name,
            instructions=f"Book {name}.",
            tools=[plain_tool(name, tool, answer, raises=raises)],
            model=ScriptedModel(f"scripted-{name}", *turns),
        )

    flights = delegate("flights", "search_flights", "TP-101 at 9:00")
    hotels = delegate("hotels", "search_hotels", "Hotel Tejo")
    cars = delegate("cars", "rent_car", "", raises="no cars left")
    coordinator = Agent(
        name="coordinator",
        instructions="Plan the trip with your helpers.",
        tools=[
            a.as_tool(tool_name=f"ask_{a.name}", tool_description=f"Ask {a.name}.")
            for a in (flights, hotels, cars)
        ],
        model=ScriptedModel(
            "scripted-coordinator",
            [
                call("ask_flights", input="Lisbon"),
                call("ask_hotels", input="Lisbon"),
                call("ask_cars", input="Lisbon"),
            ],
            [say("Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented.")],
        ),
    )
    recorder.start()
    result = await Runner.run(coordinator, "Plan my Lisbon trip.")
    assert result.final_output.startswith("Booked TP-101"), result.final_output
    assert result.last_agent.name == "coordinator"
    # The agent tool's default error handler gave the coordinator a generic error result.
    assert coordinator.model.saw("An error occurred while running the tool"), (
        coordinator.model.inputs[-1]
    )
    check_log(
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
        i = truth.agent(name, c, "delegate", f"ask_{name}")
        truth.tool(i, tool, ok=name != "cars")
        if name == "cars":
            truth.failed(i)
    recorder.write(
        "parallel_delegates",
        note=(
            "The coordinator calls three Agent.as_tool tools in one turn; the SDK runs them "
            "concurrently. cars' own tool raises out of cars (failure_error_function=None); the "
            "agent tool's default error handler gives the error to the coordinator, which answers."
        ),
        result={"final_output": result.final_output, "last_agent": "coordinator", "raised": None},
        run_ok=True,
        truth=truth,
    )


def bouncer(name: str, times: int = 40, then: str | None = None) -> Agent[Any]:
    """An agent whose model hands off (to its only handoff) ``times`` times, then answers."""
    turns: list[list[Any]] = [[call("transfer")] for _ in range(times)]
    return Agent(name=name, instructions=f"You are {name}.",
                 model=ScriptedModel(f"scripted-{name}", *turns, *([[say(then)]] if then else [])))  # fmt: skip


def ring(*agents: Agent[Any]) -> Agent[Any]:
    """Each agent hands off to the next, the last to the first; each model calls
    ``transfer_to_<next>`` (the SDK's handoff tool name)."""
    for agent, target in zip(agents, [*agents[1:], agents[0]], strict=True):
        agent.handoffs = [target]
        for turn in agent.model.turns:  # type: ignore[union-attr]
            for item in turn:
                if isinstance(item, ResponseFunctionToolCall):
                    item.name = f"transfer_to_{target.name}"
    return agents[0]


def sequence_of(first: str, items: list[Any]) -> list[str]:
    """The agents that ran, from the run's own items: the first, then each handoff's target."""
    return [first, *(i.target_agent.name for i in items if isinstance(i, HandoffOutputItem))]


def handoff_truth(ran: list[str]) -> Truth:
    truth = Truth()
    for n, agent in enumerate(ran):
        if n == 0:
            truth.agent(agent)
        else:
            truth.agent(agent, n - 1, "handoff", f"handoff to {agent}")
    return truth


async def limited(first: Agent[Any], limit: int) -> tuple[str, list[str]]:
    """Run until ``max_turns`` stops it; what the SDK raised, and the agents that ran."""
    try:
        await Runner.run(first, "Who handles my invoice?", max_turns=limit)
    except MaxTurnsExceeded as exc:
        assert exc.run_data is not None
        return f"{type(exc).__name__}: {exc}", sequence_of(first.name, exc.run_data.new_items)
    raise AssertionError("the run was meant to hit max_turns")


async def pingpong_limit(recorder: Recorder) -> None:
    first = ring(bouncer("triage"), bouncer("billing"))
    recorder.start()
    raised, ran = await limited(first, 6)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    truth = handoff_truth(ran)
    truth.failed(len(ran) - 1)  # the runner raised with triage the current agent
    circle, closures = circle_of(ran)
    assert circle == "billing -> triage -> billing", circle
    recorder.write(
        "pingpong_limit",
        note="triage and billing hand off to each other (Agent.handoffs) until max_turns (6): "
        "after six model turns the runner raises MaxTurnsExceeded, with triage (handed to by "
        "the sixth turn) the current agent. The sequence is the run's own HandoffOutputItems "
        "(MaxTurnsExceeded.run_data.new_items).",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=truth,
        loop=Loop("failed:recursion", circle, "MaxTurnsExceeded", closures),
    )


async def ring_limit(recorder: Recorder) -> None:
    first = ring(bouncer("triage"), bouncer("billing"), bouncer("refunds"))
    recorder.start()
    raised, ran = await limited(first, 7)
    assert ran == ["triage", "billing", "refunds"] * 2 + ["triage", "billing"], ran
    truth = handoff_truth(ran)
    truth.failed(len(ran) - 1)
    circle, closures = circle_of(ran)
    assert circle == "billing -> refunds -> triage -> billing", circle
    recorder.write(
        "ring_limit",
        note="A ring of three: triage hands off to billing, billing to refunds, refunds to "
        "triage, until max_turns (7) raises MaxTurnsExceeded, with billing the current agent.",
        result={"final_output": None, "last_agent": ran[-1], "raised": raised},
        run_ok=False,
        truth=truth,
        loop=Loop("failed:recursion", circle, "MaxTurnsExceeded", closures),
    )


async def handled_limit(recorder: Recorder) -> None:
    first = ring(bouncer("triage"), bouncer("billing"))
    answer = "Sorry, we could not route your question; an agent will call you back."
    recorder.start()
    # The app's own span (a web request's, say) holds the run, and ends well.
    with APP[0].start_as_current_span("POST /chat"):
        result = await Runner.run(first, "Who handles my invoice?", max_turns=4,
                                  error_handlers={"max_turns": lambda _: answer})  # fmt: skip
    assert result.final_output == answer, result.final_output
    ran = sequence_of(first.name, result.new_items)
    assert ran == ["triage", "billing"] * 2 + ["triage"], ran
    assert result.last_agent.name == ran[-1]
    truth = handoff_truth(ran)
    truth.failed(len(ran) - 1)  # the limit struck in triage's turn; the handler answered
    circle, closures = circle_of(ran)
    recorder.write(
        "handled_limit",
        note="triage and billing hand off to each other until max_turns (4); the SDK's "
        "max-turns error handler (Runner.run(error_handlers={'max_turns': ...})) answers with "
        "an apology, which is the run's final output: the run returns normally. The app's "
        "span (POST /chat, ended well) holds the run: without it the spans are those of a "
        "raised MaxTurnsExceeded (the last agent span in error, the workflow span ok).",
        result={"final_output": answer, "last_agent": ran[-1], "raised": None},
        run_ok=True,
        truth=truth,
        loop=Loop("degraded", circle, "MaxTurnsExceeded", closures),
    )


async def loop_ok(recorder: Recorder) -> None:
    first = ring(bouncer("triage", 3, "Your invoice INV-7 is 40 EUR."), bouncer("billing", 3))
    recorder.start()
    result = await Runner.run(first, "How much is my invoice?")
    assert result.final_output == "Your invoice INV-7 is 40 EUR.", result.final_output
    ran = sequence_of(first.name, result.new_items)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    assert (circle, closures) == ("billing -> triage -> billing", 3)
    recorder.write(
        "loop_ok",
        note="triage and billing hand off to each other three times each, under the default "
        "max_turns (10); then triage answers.",
        result={"final_output": result.final_output, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=handoff_truth(ran),
        loop=Loop("ok", circle, None, closures),
    )


async def main() -> None:
    provider, exporter = memory_provider("openai-agents-recording")
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    APP.append(provider.get_tracer("app"))
    recorder = Recorder(
        "openai_agents",
        "openai-agents",
        instrumented_by("openinference-instrumentation-openai-agents"),
        exporter,
    )
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, parallel_delegates, pingpong_limit,
         ring_limit, handled_limit, loop_ok]
    ):  # fmt: skip
        await scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
