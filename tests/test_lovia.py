"""The lovia adapter, on real lovia runs with its offline ScriptedProvider."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from lovia import Agent, CancelToken, RunCancelled, RunContext, Runner, Subagents, tool
from lovia.testing import ScriptedProvider, batch, call, text

from tracekit.events import Enter, Event, Exit, RunEnd, RunStart, encode_event
from tracekit.failures import classify_events
from tracekit.sdk import AgentTracer, Guards, MemorySink
from tracekit.sdk.integrations.lovia import LoviaTracer
from tracekit.store import Store
from tracekit.tree import agent_tree
from tracekit.tree.text import describe_agent_tree


class _Tee:
    """Pass spans to the adapter and note when lovia closed each one."""

    def __init__(self, inner: LoviaTracer) -> None:
        self.inner = inner
        self.closed: list[tuple[str, dict[str, object], int]] = []

    @contextmanager
    def span(self, name: str, /, **attributes: object) -> Iterator[Any]:
        try:
            with self.inner.span(name, **attributes) as span:
                yield span
        finally:
            self.closed.append((name, attributes, time.time_ns()))


def _shape(events: list[Event]) -> str:
    """The tree as text, durations left out (they differ from run to run)."""
    text_ = describe_agent_tree(agent_tree(events))
    return re.sub(r", [0-9.]+(ms|s|m)\)", ")", text_)


def _run(agent: Agent[Any], prompt: str) -> tuple[Any, list[Event], _Tee]:
    sink = MemorySink()
    tee = _Tee(LoviaTracer(AgentTracer(sink)))
    result = asyncio.run(Runner.run(agent, prompt, tracer=tee))
    return result, sink.events, tee


@tool
def lookup_invoice(order: str) -> str:
    """Look up the invoice of an order."""
    return f"order {order}: charged twice"


def test_triage_hands_off_to_billing() -> None:
    billing = Agent(
        name="billing",
        instructions="Handle billing issues.",
        model=ScriptedProvider(
            [call("lookup_invoice", {"order": "10248"}), text("Refund issued.")]
        ),
        tools=[lookup_invoice],
    )
    triage = Agent(
        name="triage",
        instructions="Route the user.",
        model=ScriptedProvider([call("transfer_to_billing", {"reason": "double charge"})]),
        handoffs=[billing],
    )
    billing.model.model = "scripted-billing"  # type: ignore[union-attr]  # as a real provider's label
    result, events, _ = _run(triage, "I was charged twice.")
    assert result.final_agent.name == "billing" and result.output == "Refund issued."
    exit_ = next(e for e in events if isinstance(e, Exit))
    assert exit_.usage is not None and exit_.usage.models == ["scripted-billing"]
    assert _shape(events) == ("transfer_to_billing -> billing (handoff, ok)\n  lookup_invoice")
    start = events[0]
    assert isinstance(start, RunStart) and start.agent == "triage"
    handoff = next(e for e in events if isinstance(e, Enter))
    assert handoff.parentRunId == start.runId and handoff.kind == "handoff"
    # billing's tool ran in billing's run
    step = next(e for e in events if type(e).__name__ == "Node")
    assert step.runId == handoff.runId  # type: ignore[union-attr]


def test_manager_delegates_to_summarizer_as_a_tool() -> None:
    summarizer = Agent(
        name="summarizer",
        instructions="Summarize in five bullets.",
        model=ScriptedProvider([text("- short")]),
    )
    manager = Agent(
        name="manager",
        instructions="Delegate summaries.",
        model=ScriptedProvider(
            [call("ask_summarizer", {"input": "a long passage"}), text("Here it is: - short")]
        ),
        tools=[summarizer.as_tool(description="Summarize a passage.")],
    )
    result, events, _ = _run(manager, "Summarise this.")
    assert result.output == "Here it is: - short"
    assert _shape(events) == "ask_summarizer -> summarizer (ok)"
    enter = next(e for e in events if isinstance(e, Enter))
    assert (enter.kind, enter.node) == ("delegate", "ask_summarizer")


def _researcher(name: str, answer: str) -> Agent[Any]:
    return Agent(name=name, instructions="Research.", model=ScriptedProvider([text(answer)]))


def test_parent_spawns_two_background_subagents() -> None:
    parent = Agent(
        name="assistant",
        instructions="Compare X and Y.",
        model=ScriptedProvider(
            [
                batch(
                    ("spawn_subagent", {"prompt": "X", "agent": "researcher"}),
                    ("spawn_subagent", {"prompt": "Y", "agent": "analyst"}),
                ),
                call("wait_subagents", {}),
                text("X is bigger than Y."),
            ]
        ),
        plugins=[Subagents([_researcher("researcher", "X: 10"), _researcher("analyst", "Y: 3")])],
    )
    result, events, tee = _run(parent, "Research X and Y, then compare.")
    assert result.output == "X is bigger than Y."
    assert _shape(events) == (
        "spawn_subagent -> researcher (subagent, ok)\n"
        "spawn_subagent -> analyst (subagent, ok)\n"
        "wait_subagents"
    )
    root = events[0]
    assert isinstance(root, RunStart)
    children = [e for e in events if isinstance(e, Enter)]
    assert {e.parentRunId for e in children} == {root.runId}
    # each child ended after the spawn_subagent tool call that started it
    spawn_ends = [t for name, attrs, t in tee.closed if attrs.get("name") == "spawn_subagent"]
    exits = [e for e in events if isinstance(e, Exit)]
    assert len(spawn_ends) == 2 and len(exits) == 2
    assert min(e.ts for e in exits) * 1e6 > min(spawn_ends)


@tool
async def slow_search(query: str) -> str:
    """Search slowly."""
    await asyncio.sleep(30)
    return "never"


def test_subagent_still_running_at_the_end_is_cancelled() -> None:
    child = Agent(
        name="researcher",
        instructions="Research.",
        model=ScriptedProvider([call("slow_search", {"query": "X"})]),
        tools=[slow_search],
    )
    parent = Agent(
        name="assistant",
        instructions="Spawn and leave.",
        model=ScriptedProvider(
            [call("spawn_subagent", {"prompt": "X", "agent": "researcher"}), text("Done.")]
        ),
        plugins=[Subagents([child])],
    )
    started = time.monotonic()
    result, events, _ = _run(parent, "Go.")
    assert result.output == "Done." and time.monotonic() - started < 10
    assert _shape(events) == (
        "spawn_subagent -> researcher (subagent, cancelled)\n  slow_search (error)"
    )
    exit_ = next(e for e in events if isinstance(e, Exit))
    assert exit_.status == "cancelled"


@tool
def refund(order: str) -> str:
    """Refund an order."""
    raise RuntimeError("payments API down")


def test_a_failing_tool_is_a_failed_step_and_lovia_carries_on() -> None:
    billing = Agent(
        name="billing",
        instructions="Refund.",
        model=ScriptedProvider([call("refund", {"order": "1"}), text("Sorry, try later.")]),
        tools=[refund],
    )
    result, events, _ = _run(billing, "Refund order 1.")
    assert result.output == "Sorry, try later."  # lovia turned it into a tool error
    node = next(e for e in events if type(e).__name__ == "Node")
    assert node.id == "refund" and node.ok is False  # type: ignore[union-attr]
    assert events[-1].ok  # type: ignore[union-attr]


def test_wrapping_guards_are_refused() -> None:
    with pytest.raises(ValueError, match="wrap_failures=False"):
        LoviaTracer(AgentTracer(MemorySink(), guards=Guards()))
    LoviaTracer(AgentTracer(MemorySink(), guards=Guards(wrap_failures=False)))


def test_a_chain_of_handoffs_nests_each_target_under_the_last() -> None:
    refunds = Agent(
        name="refunds",
        instructions="Refund.",
        model=ScriptedProvider([call("lookup_invoice", {"order": "7"}), text("Refunded.")]),
        tools=[lookup_invoice],
    )
    billing = Agent(
        name="billing",
        instructions="Billing.",
        model=ScriptedProvider([call("transfer_to_refunds", {})]),
        handoffs=[refunds],
    )
    triage = Agent(
        name="triage",
        instructions="Route.",
        model=ScriptedProvider([call("transfer_to_billing", {})]),
        handoffs=[billing],
    )
    result, events, _ = _run(triage, "Refund order 7.")
    assert result.final_agent.name == "refunds"
    assert _shape(events) == (
        "transfer_to_billing -> billing (handoff, ok)\n"
        "  transfer_to_refunds -> refunds (handoff, ok)\n"
        "    lookup_invoice"
    )


@tool
async def short_search(query: str) -> str:
    """Search for a moment."""
    await asyncio.sleep(0.2)
    return "found"


@tool
async def pause() -> str:
    """Wait a moment."""
    await asyncio.sleep(0.05)
    return "ok"


def _cancelling_parent() -> Agent[Any]:
    child = Agent(
        name="researcher",
        instructions="Research.",
        model=ScriptedProvider(
            [call("short_search", {"query": "X"}), call("short_search", {"query": "Y"}), text("-")]
        ),
        tools=[short_search],
    )
    return Agent(
        name="assistant",
        instructions="Spawn, then change your mind.",
        model=ScriptedProvider(
            [
                call("spawn_subagent", {"prompt": "X", "agent": "researcher"}),
                call("pause", {}),
                call("cancel_subagent", {"id": "t1"}),
                call("wait_subagents", {}),
                text("Stopped it."),
            ]
        ),
        tools=[pause],
        plugins=[Subagents([child])],
    )


def test_a_subagent_cancelled_on_purpose_is_cancelled_and_the_parent_ok(tmp_path: Any) -> None:
    result, events, _ = _run(_cancelling_parent(), "Go.")
    assert result.output == "Stopped it."  # lovia's own result: the parent carried on
    exit_ = next(e for e in events if isinstance(e, Exit))
    assert (exit_.agent, exit_.status, exit_.error) == ("researcher", "cancelled", None)
    assert _shape(events).splitlines()[0] == "spawn_subagent -> researcher (subagent, cancelled)"
    assert classify_events(events)[events[0].runId].outcome == "ok"  # type: ignore[union-attr]
    with Store(tmp_path / "fleet.duckdb") as store:  # the store's set-based pass agrees
        store.ingest_records([encode_event(e) for e in events], source="lovia")
        outcome = store.sql("SELECT outcome FROM runs").outcome.tolist()
    assert outcome == ["ok"]


@tool
async def give_up(ctx: RunContext[Any]) -> str:
    """Stop the whole run."""
    ctx.cancel_token.cancel("the user left")
    return "stopping"


def test_a_run_cancelled_by_its_token_is_cancelled_not_failed() -> None:
    agent = Agent(
        name="assistant",
        instructions="Give up.",
        model=ScriptedProvider([call("give_up", {}), text("never")]),
        tools=[give_up],
    )
    sink = MemorySink()
    with pytest.raises(RunCancelled):
        asyncio.run(
            Runner.run(
                agent, "Go.", tracer=LoviaTracer(AgentTracer(sink)), cancel_token=CancelToken()
            )
        )
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok is False and end.failure is None
    assert end.error is not None and end.error.code == "CANCELLED"
    assert classify_events(sink.events)[end.runId].outcome == "cancelled"
