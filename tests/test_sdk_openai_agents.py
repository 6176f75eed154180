"""The OpenAI Agents processor, on real runs of the openai-agents package, offline.

The model is scripted on the SDK's own ``Model`` interface (no key); the
network is refused for the whole module, so a run that tried to reach a
model or an exporter fails instead of passing quietly.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    Runner,
    function_tool,
    input_guardrail,
    set_trace_processors,
    trace,
)
from agents.items import ModelResponse, TResponseOutputItem
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.tracing import generation_span, response_span
from agents.usage import Usage as AgentsUsage

from tracekit.events import Enter, Event, Exit, Node, RunEnd, RunStart, Usage
from tracekit.failures import classify_events
from tracekit.sdk import AgentTracer, Guards, MemorySink
from tracekit.sdk.integrations.openai_agents import OpenAIAgentsProcessor, handoff_tool
from tracekit.tree import agent_tree
from tracekit.tree.text import describe_agent_tree

Step = Sequence[TResponseOutputItem] | Exception


class ScriptedModel(Model):
    """Answers from a script, as a real model adapter does: a generation span with usage."""

    def __init__(self, name: str, steps: Sequence[Step], tokens: tuple[int, int] = (10, 2)) -> None:
        self.name = name
        self.steps = list(steps)
        self.tokens = tokens

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        with generation_span(model=self.name) as span:
            step = self.steps.pop(0)
            await asyncio.sleep(0)  # a real model call yields: parallel tools interleave
            if isinstance(step, Exception):
                raise step
            inp, out = self.tokens
            span.span_data.usage = {"input_tokens": inp, "output_tokens": out}
            usage = AgentsUsage(requests=1, input_tokens=inp, output_tokens=out)
            return ModelResponse(output=list(step), usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run without streaming")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network refused in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def sink() -> Iterator[MemorySink]:
    sink = MemorySink()
    set_trace_processors([OpenAIAgentsProcessor(AgentTracer(sink))])
    yield sink
    set_trace_processors([])


def _shape(events: list[Event]) -> str:
    """The tree as text, durations left out."""
    return re.sub(r", [0-9.]+(ms|s|m)\)", ")", describe_agent_tree(agent_tree(events)))


def _call(name: str, n: int, **args: Any) -> TResponseOutputItem:
    return function_call(name, args, call_id=f"call-{name}-{n}")


def _exits(events: list[Event]) -> dict[str, Exit]:
    return {e.agent: e for e in events if isinstance(e, Exit)}


@function_tool
def lookup_invoice(order: str) -> str:
    """Look up the invoice of an order."""
    return f"order {order}: charged twice"


@function_tool
def refund(order: str) -> str:
    """Refund an order."""
    raise RuntimeError("payments API down")


def _chain_of_three() -> Agent[Any]:
    refunds = Agent(
        name="refunds",
        model=ScriptedModel(
            "model-r", [[_call("lookup_invoice", 1, order="7")], [assistant_message("Refunded.")]]
        ),
        tools=[lookup_invoice],
    )
    billing = Agent(
        name="billing",
        model=ScriptedModel("model-b", [[_call(handoff_tool("refunds"), 1)]]),
        handoffs=[refunds],
    )
    return Agent(
        name="triage",
        model=ScriptedModel("model-t", [[_call(handoff_tool("billing"), 1)]]),
        handoffs=[billing],
    )


def test_a_chain_of_three_handoffs_nests_each_target_under_the_agent_that_handed_off(
    sink: MemorySink,
) -> None:
    async def main() -> Any:
        with trace("support", group_id="conv-42"):
            return await Runner.run(_chain_of_three(), "Refund order 7.")

    result = asyncio.run(main())
    assert (result.final_output, result.last_agent.name) == ("Refunded.", "refunds")
    events = sink.events
    assert _shape(events) == (
        "transfer_to_billing -> billing (handoff, ok)\n"
        "  transfer_to_refunds -> refunds (handoff, ok)\n"
        "    lookup_invoice"
    )
    start = events[0]
    assert isinstance(start, RunStart) and (start.agent, start.session) == ("triage", "conv-42")
    enters = {e.agent: e for e in events if isinstance(e, Enter)}
    assert enters["billing"].parentRunId == start.runId
    assert enters["refunds"].parentRunId == enters["billing"].runId
    assert {e.kind for e in enters.values()} == {"handoff"}
    tool = next(e for e in events if isinstance(e, Node))
    assert (tool.call, tool.ok, tool.runId) == ("tool", True, enters["refunds"].runId)
    # each agent's own model usage, not its children's
    exits = _exits(events)
    assert exits["refunds"].usage == Usage(inputTokens=20, outputTokens=4, models=["model-r"])
    assert exits["billing"].usage == Usage(inputTokens=10, outputTokens=2, models=["model-b"])
    end = events[-1]
    assert isinstance(end, RunEnd) and end.ok
    assert end.usage == Usage(inputTokens=10, outputTokens=2, models=["model-t"])
    # the agent that handed off ends after the one it handed off to
    assert exits["billing"].ts >= exits["refunds"].ts and end.ts >= exits["billing"].ts


def test_a_handoff_then_an_agent_as_tool(sink: MemorySink) -> None:
    summarizer = Agent(
        name="summarizer", model=ScriptedModel("model-s", [[assistant_message("- short")]])
    )
    manager = Agent(
        name="manager",
        model=ScriptedModel(
            "model-m",
            [
                [_call("summarize", 1, input="a long passage")],
                [assistant_message("Summary: - short")],
            ],
        ),
        tools=[summarizer.as_tool(tool_name="summarize", tool_description="Summarize.")],
    )
    front = Agent(
        name="front_desk",
        model=ScriptedModel("model-f", [[_call(handoff_tool("manager"), 1)]]),
        handoffs=[manager],
    )
    result = asyncio.run(Runner.run(front, "Summarise this."))
    assert (result.final_output, result.last_agent.name) == ("Summary: - short", "manager")
    assert _shape(sink.events) == (
        "transfer_to_manager -> manager (handoff, ok)\n  summarize -> summarizer (ok)"
    )
    enters = {e.agent: e for e in sink.events if isinstance(e, Enter)}
    assert (enters["summarizer"].kind, enters["summarizer"].node) == ("delegate", "summarize")
    assert enters["summarizer"].parentRunId == enters["manager"].runId
    assert _exits(sink.events)["summarizer"].usage == Usage(
        inputTokens=10, outputTokens=2, models=["model-s"]
    )


def test_a_tool_that_raises_inside_a_handed_off_agent(sink: MemorySink) -> None:
    billing = Agent(
        name="billing",
        model=ScriptedModel(
            "model-b", [[_call("refund", 1, order="1")], [assistant_message("Sorry, try later.")]]
        ),
        tools=[refund],
    )
    triage = Agent(
        name="triage",
        model=ScriptedModel("model-t", [[_call(handoff_tool("billing"), 1)]]),
        handoffs=[billing],
    )
    result = asyncio.run(Runner.run(triage, "Refund order 1."))
    assert result.final_output == "Sorry, try later."  # the SDK handed the error to the model
    assert _shape(sink.events) == (
        "transfer_to_billing -> billing (handoff, ok)\n  refund (error TOOL_ERROR)"
    )
    node = next(e for e in sink.events if isinstance(e, Node))
    assert (node.id, node.call, node.ok) == ("transfer_to_billing/billing/refund", "tool", False)
    assert node.error is not None and node.error.code == "TOOL_ERROR"
    assert node.error.message  # the SDK redacts the exception's own words
    # billing caught its tool's error and answered: the run looked fine, but a step failed
    found = classify_events(sink.events)[sink.events[0].runId]  # type: ignore[union-attr]
    assert (found.outcome, found.origin_agent, found.origin_code, found.origin_step) == (
        "degraded", "billing", "TOOL_ERROR", "refund",
    )  # fmt: skip


def test_parallel_agent_tools_with_one_failing(sink: MemorySink) -> None:
    researcher = Agent(
        name="researcher", model=ScriptedModel("model-r", [[assistant_message("X: 10")]])
    )
    analyst = Agent(name="analyst", model=ScriptedModel("model-a", [RuntimeError("model down")]))
    lead = Agent(
        name="lead",
        model=ScriptedModel(
            "model-l",
            [
                [_call("research", 1, input="X"), _call("analyse", 1, input="Y")],
                [assistant_message("X is 10; the analysis failed.")],
            ],
        ),
        tools=[
            researcher.as_tool(tool_name="research", tool_description="Research."),
            analyst.as_tool(tool_name="analyse", tool_description="Analyse."),
        ],
    )
    result = asyncio.run(Runner.run(lead, "Compare X and Y."))
    assert result.final_output == "X is 10; the analysis failed."  # the caller recovered
    assert _shape(sink.events) == (
        "research -> researcher (ok)\nanalyse -> analyst (error Error in agent run)"
    )
    exits = _exits(sink.events)
    assert exits["analyst"].error is not None and exits["analyst"].error.message == "model down"
    enters = [e for e in sink.events if isinstance(e, Enter)]
    assert {e.parentRunId for e in enters} == {sink.events[0].runId}  # type: ignore[union-attr]
    assert {e.kind for e in enters} == {"delegate"}
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok
    finding = classify_events(sink.events)[end.runId]
    assert (finding.outcome, finding.origin_agent) == ("degraded", "analyst")


def test_a_run_that_raises_fails_every_agent_of_its_handoff_chain(sink: MemorySink) -> None:
    billing = Agent(name="billing", model=ScriptedModel("model-b", [RuntimeError("model down")]))
    triage = Agent(
        name="triage",
        model=ScriptedModel("model-t", [[_call(handoff_tool("billing"), 1)]]),
        handoffs=[billing],
    )
    with pytest.raises(RuntimeError, match="model down"):
        asyncio.run(Runner.run(triage, "Help."))
    exits = _exits(sink.events)
    assert exits["billing"].status == "error"
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok is False and end.failure == "agent"
    assert classify_events(sink.events)[end.runId].outcome == "failed:child"


class _Broken:
    def emit(self, event: Event) -> None:
        raise OSError("disk full")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_failing_sink_logs_once_and_the_agents_carry_on(caplog: pytest.LogCaptureFixture) -> None:
    kept = MemorySink()
    set_trace_processors([OpenAIAgentsProcessor(AgentTracer(_Broken(), kept))])
    try:
        with caplog.at_level(logging.WARNING, logger="tracekit.sdk"):
            result = asyncio.run(Runner.run(_chain_of_three(), "Refund order 7."))
    finally:
        set_trace_processors([])
    assert result.final_output == "Refunded."
    warnings = [r for r in caplog.records if r.name == "tracekit.sdk"]
    assert len(warnings) == 1 and "disk full" in warnings[0].getMessage()
    assert "refunds (handoff, ok)" in _shape(kept.events)  # the other sink got everything


def test_a_failure_of_the_processor_itself_never_reaches_the_agent(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    monkeypatch.setattr(tk, "handoff", _raise)
    set_trace_processors([OpenAIAgentsProcessor(tk)])
    try:
        with caplog.at_level(logging.WARNING, logger="tracekit.sdk"):
            result = asyncio.run(Runner.run(_chain_of_three(), "Refund order 7."))
    finally:
        set_trace_processors([])
    assert result.final_output == "Refunded."
    warnings = [r for r in caplog.records if r.name == "tracekit.sdk"]
    assert len(warnings) == 1 and "boom" in warnings[0].getMessage()


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")


def test_wrapping_guards_are_refused() -> None:
    with pytest.raises(ValueError, match="wrap_failures=False"):
        OpenAIAgentsProcessor(AgentTracer(MemorySink(), guards=Guards()))
    OpenAIAgentsProcessor(AgentTracer(MemorySink(), guards=Guards(wrap_failures=False)))


@input_guardrail
def no_card_numbers(ctx: Any, agent: Agent[Any], text: Any) -> GuardrailFunctionOutput:
    """Trip on anything that looks like a card number."""
    tripped = bool(re.search(r"\d{4} \d{4}", str(text)))
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=tripped)


def test_a_tripped_guardrail_is_a_failed_step_and_the_run_fails(sink: MemorySink) -> None:
    agent = Agent(
        name="triage",
        model=ScriptedModel("model-t", [[assistant_message("Hello.")]]),
        input_guardrails=[no_card_numbers],
    )
    with pytest.raises(InputGuardrailTripwireTriggered):
        asyncio.run(Runner.run(agent, "My card is 4242 4242."))
    node = next(e for e in sink.events if isinstance(e, Node))
    assert (node.id, node.ok) == ("no_card_numbers", False)
    assert node.error is not None and node.error.code == "GUARDRAIL_TRIPPED"
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok is False
    # the same guardrail lets a clean input through
    result = asyncio.run(Runner.run(agent, "Hello?"))
    assert result.final_output == "Hello."
    assert [e.ok for e in sink.events if isinstance(e, Node)][-1] is True


class ResponsesModel(ScriptedModel):
    """As the Responses API adapter traces: a response span, the model on its response."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        with response_span() as span:
            step = self.steps.pop(0)
            assert not isinstance(step, Exception)
            span.span_data.usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
            span.span_data.response = SimpleNamespace(id="resp-1", model=self.name)  # type: ignore[assignment]
            usage = AgentsUsage(requests=1, input_tokens=7, output_tokens=3)
            return ModelResponse(output=list(step), usage=usage, response_id="resp-1")


def test_response_spans_give_usage_too(sink: MemorySink) -> None:
    agent = Agent(name="desk", model=ResponsesModel("gpt-x", [[assistant_message("Hi.")]]))
    assert asyncio.run(Runner.run(agent, "Hello?")).final_output == "Hi."
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok
    assert end.usage == Usage(inputTokens=7, outputTokens=3, models=["gpt-x"])
