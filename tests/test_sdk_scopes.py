"""Runs, steps and invocations become the right records, sync and async."""

from __future__ import annotations

import asyncio
import time

import pytest

from tracekit.events import Enter, Exit, Node, RunEnd, RunStart
from tracekit.sdk import AgentTracer, MemorySink


@pytest.fixture
def sink() -> MemorySink:
    return MemorySink()


@pytest.fixture
def tk(sink: MemorySink) -> AgentTracer:
    return AgentTracer(sink)


def test_run_step_and_delegation_records(tk: AgentTracer, sink: MemorySink) -> None:
    with tk.run("orchestrator") as run:
        with tk.step("decide"):
            pass
        with tk.delegate("sql", node="delegate") as inv:
            with tk.step("write_query"):
                pass
        with tk.step("reply"):
            pass
    kinds = [type(e).__name__ for e in sink.events]
    assert kinds == ["RunStart", "Node", "Enter", "Node", "Exit", "Node", "RunEnd"]
    start, decide, enter, write, exit_, _reply, end = sink.events
    assert isinstance(start, RunStart) and start.runId == run.run_id
    assert isinstance(decide, Node) and decide.id == "decide" and decide.runId == run.run_id
    assert isinstance(enter, Enter)
    assert (enter.agent, enter.node, enter.kind) == ("sql", "delegate", "delegate")
    assert enter.parentRunId == run.run_id and enter.runId == inv.run_id
    assert isinstance(write, Node) and write.runId == inv.run_id
    assert write.id == "delegate/sql/write_query"
    assert isinstance(exit_, Exit) and exit_.ok and exit_.status == "ok"
    assert exit_.invocationId == enter.invocationId and exit_.durationMs is not None
    assert isinstance(end, RunEnd) and end.ok and end.failure is None
    assert [e.seq for e in sink.events] == list(range(1, 8))
    assert len({e.traceId for e in sink.events}) == 1


def test_a_step_that_delegates_is_shown_by_its_invocation(
    tk: AgentTracer, sink: MemorySink
) -> None:
    with tk.run("front_desk"), tk.step("hand_over"), tk.handoff("billing") as billing:
        with tk.step("escalate"), tk.delegate("refunds"):
            with tk.step("decide"):
                pass
    nodes = [e.id for e in sink.events if isinstance(e, Node)]
    assert nodes == ["hand_over/billing/escalate/refunds/decide"]
    enters = [e for e in sink.events if isinstance(e, Enter)]
    assert [(e.agent, e.node, e.kind) for e in enters] == [
        ("billing", "hand_over", "handoff"),
        ("refunds", "escalate", "delegate"),
    ]
    assert enters[1].parentRunId == billing.run_id


def test_decorators_sync_and_async_keep_results_and_nest(tk: AgentTracer, sink: MemorySink) -> None:
    @tk.delegate("summarizer", node="summarise")
    def summarise(text: str) -> str:
        return text.upper()

    @tk.subagent("researcher")
    async def research(topic: str) -> list[str]:
        await asyncio.sleep(0)
        return [topic, summarise(topic)]

    @tk.run("manager")
    async def main() -> list[list[str]]:
        return list(await asyncio.gather(research("x"), research("y")))

    assert asyncio.run(main()) == [["x", "X"], ["y", "Y"]]
    enters = {e.invocationId: e for e in sink.events if isinstance(e, Enter)}
    researchers = {e.runId for e in enters.values() if e.agent == "researcher"}
    summarisers = [e for e in enters.values() if e.agent == "summarizer"]
    assert len(researchers) == 2 and len(summarisers) == 2
    assert {e.parentRunId for e in summarisers} == researchers


def test_exceptions_pass_unchanged_without_guards(tk: AgentTracer, sink: MemorySink) -> None:
    boom = KeyError("order 10248")
    with pytest.raises(KeyError) as caught, tk.run("desk"), tk.delegate("refunds"):
        raise boom
    assert caught.value is boom
    exit_ = next(e for e in sink.events if isinstance(e, Exit))
    assert exit_.status == "error" and exit_.error is not None
    assert exit_.error.code == "KeyError" and "10248" in exit_.error.message
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and not end.ok and end.failure == "agent"


def test_timing_is_not_changed(tk: AgentTracer, sink: MemorySink) -> None:
    @tk.delegate("slow")
    def slow() -> float:
        time.sleep(0.05)
        return 1.5

    started = time.perf_counter()
    with tk.run("r"):
        assert slow() == 1.5
    elapsed = time.perf_counter() - started
    assert 0.05 <= elapsed < 0.5
    exit_ = next(e for e in sink.events if isinstance(e, Exit))
    assert exit_.durationMs is not None and 50.0 <= exit_.durationMs <= elapsed * 1000


def test_pending_and_cancelled(tk: AgentTracer, sink: MemorySink) -> None:
    async def main() -> None:
        with tk.run("desk"):
            with tk.delegate("refunds") as inv:
                inv.mark_pending()
            task = tk.spawn("researcher", asyncio.sleep(10), node="fan_out")
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    statuses = {e.agent: e.status for e in sink.events if isinstance(e, Exit)}
    assert statuses == {"refunds": "pending", "researcher": "cancelled"}


def test_spawn_cancelled_before_it_starts(tk: AgentTracer, sink: MemorySink) -> None:
    async def child() -> None:  # never runs
        raise AssertionError

    async def main() -> None:
        with tk.run("desk"):
            task = tk.spawn("researcher", child())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    exit_ = next(e for e in sink.events if isinstance(e, Exit))
    assert exit_.status == "cancelled"


def test_background_subagent_outlives_its_step(tk: AgentTracer, sink: MemorySink) -> None:
    async def research() -> str:
        await asyncio.sleep(0.02)
        with tk.step("report"):
            pass
        return "done"

    async def main() -> str:
        with tk.run("assistant") as run:
            with tk.step("fan_out"):
                task = tk.spawn("researcher", research())
            with tk.step("carry_on"):
                pass
            result = await task
        assert run.run_id
        return result

    assert asyncio.run(main()) == "done"
    enter = next(e for e in sink.events if isinstance(e, Enter))
    assert enter.kind == "subagent" and enter.node == "fan_out"
    start = sink.events[0]
    assert isinstance(start, RunStart) and enter.parentRunId == start.runId
    report = next(e for e in sink.events if isinstance(e, Node) and e.id.endswith("report"))
    assert report.runId == enter.runId
    order = [type(e).__name__ + ":" + getattr(e, "id", "") for e in sink.events]
    assert order.index("Node:carry_on") < order.index("Exit:")


def test_step_outside_a_run_records_nothing(tk: AgentTracer, sink: MemorySink) -> None:
    with tk.step("lonely"):
        pass
    assert sink.events == []


def test_a_decorated_agent_takes_the_node_of_each_caller(tk: AgentTracer, sink: MemorySink) -> None:
    @tk.delegate("sql")
    def ask(q: str) -> str:
        return q

    with tk.run("orchestrator"):
        with tk.step("first"):
            ask("a")
        with tk.step("second"):
            ask("b")
        ask("c")
    nodes = [e.node for e in sink.events if isinstance(e, Enter)]
    assert nodes == ["first", "second", None]
    assert not any(isinstance(e, Node) for e in sink.events)  # both steps delegated


def test_a_cancelled_run_ends_with_a_cancelled_error(tk: AgentTracer, sink: MemorySink) -> None:
    """run.end has no status: its error's code CANCELLED is what the fleet rules read."""
    from tracekit.failures import classify_events

    async def main() -> None:
        with tk.run("desk"):
            await asyncio.sleep(10)

    async def outer() -> None:
        task = asyncio.get_running_loop().create_task(main())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(outer())
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok is False and end.failure is None
    assert end.error is not None and end.error.code == "CANCELLED"
    assert classify_events(sink.events)[end.runId].outcome == "cancelled"


def test_integrations_need_only_the_sdk_facade() -> None:
    """What an integration uses of the SDK is exported by ``tracekit.sdk``: no inner module."""
    import ast
    from pathlib import Path

    import tracekit.sdk
    from tracekit.sdk import integrations

    folder = Path(integrations.__file__).parent
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tracekit.sdk"):
                assert node.module == "tracekit.sdk", f"{path.name} imports {node.module}"
                assert {a.name for a in node.names} <= set(tracekit.sdk.__all__)
