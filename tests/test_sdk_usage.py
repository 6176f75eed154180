"""Model usage and sessions in the SDK's records."""

from __future__ import annotations

import asyncio
import json

import pytest

from tracekit.events import Exit, Node, RunEnd, RunStart, Usage, decode_event, encode_event
from tracekit.sdk import AgentTracer, JsonlSink, MemorySink


def _exits(sink: MemorySink) -> dict[str, Exit]:
    return {e.agent: e for e in sink.events if isinstance(e, Exit)}


def test_an_invocation_sums_its_own_usage_not_its_childrens() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    with tk.run("desk") as run:
        run.usage(input_tokens=50, output_tokens=5, model="small")
        with tk.delegate("billing", node="ask_billing") as billing:
            billing.usage(input_tokens=100, output_tokens=20, model="big")
            with tk.delegate("refunds", node="ask_refunds") as refunds:
                refunds.usage(input_tokens=7, output_tokens=3, model="small")
            billing.usage(input_tokens=1, output_tokens=2, model="small")
    exits = _exits(sink)
    assert exits["billing"].usage == Usage(
        inputTokens=101, outputTokens=22, models=["big", "small"]
    )
    assert exits["refunds"].usage == Usage(inputTokens=7, outputTokens=3, models=["small"])
    end = sink.events[-1]
    assert isinstance(end, RunEnd)
    assert end.usage == Usage(inputTokens=50, outputTokens=5, models=["small"])


def test_without_usage_the_records_carry_none() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    with tk.run("desk"), tk.delegate("sql"), tk.step("say"):
        pass
    assert all(getattr(e, "usage", None) is None for e in sink.events)
    assert b"usage" not in b"".join(encode_event(e) for e in sink.events)


def test_a_steps_usage_is_on_its_node_and_its_invocation() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    with tk.run("desk"), tk.delegate("sql", node="ask") as sql:
        with tk.step("think", call="llm") as step:
            step.usage(input_tokens=30, output_tokens=4, model="m")
        with tk.step("answer", call="llm"):
            tk.usage(input_tokens=10, model="m")  # the open step, found from the context
        sql.usage(output_tokens=1)
    nodes = {e.id: e for e in sink.events if isinstance(e, Node)}
    assert nodes["ask/sql/think"].usage == Usage(inputTokens=30, outputTokens=4, models=["m"])
    assert nodes["ask/sql/think"].call == "llm"
    assert nodes["ask/sql/answer"].usage == Usage(inputTokens=10, models=["m"])
    assert _exits(sink)["sql"].usage == Usage(inputTokens=40, outputTokens=5, models=["m"])


def test_tk_usage_outside_a_run_records_nothing() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    tk.usage(input_tokens=1, model="m")
    with tk.step("alone") as step:
        step.usage(input_tokens=1)
    assert sink.events == []


@pytest.mark.parametrize(
    "kwargs",
    [{"input_tokens": -1}, {"output_tokens": 1.5}, {"input_tokens": True}, {"model": ""}],
)
def test_a_wrong_count_is_refused_where_it_is_given(kwargs: dict) -> None:
    tk = AgentTracer(MemorySink())
    with tk.run("desk"), tk.delegate("sql") as sql, pytest.raises(ValueError):
        sql.usage(**kwargs)


def test_usage_written_to_jsonl_reads_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "run.jsonl"
    tk = AgentTracer(JsonlSink(path))
    with tk.run("desk", session="conv-3"), tk.delegate("sql") as sql:
        sql.usage(input_tokens=12, output_tokens=2, model="m")
    tk.close()
    lines = path.read_bytes().splitlines()
    records = [decode_event(line) for line in lines]
    start, exit_ = records[0], records[2]
    assert isinstance(start, RunStart) and start.session == "conv-3"
    assert isinstance(exit_, Exit) and exit_.usage == Usage(
        inputTokens=12, outputTokens=2, models=["m"]
    )
    assert json.loads(lines[2])["usage"] == {"inputTokens": 12, "outputTokens": 2, "models": ["m"]}


def test_a_failed_step_carries_its_error() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    with tk.run("desk"), pytest.raises(KeyError), tk.step("lookup", call="tool"):
        raise KeyError("order 7")
    node = next(e for e in sink.events if isinstance(e, Node))
    assert (node.ok, node.call) == (False, "tool")
    assert node.error is not None and node.error.code == "KeyError"


def test_a_decorated_run_keeps_its_session_each_call() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)

    @tk.run("desk", session="conv-9")
    async def answer() -> str:
        tk.usage(input_tokens=3, model="m")
        return "ok"

    assert asyncio.run(answer()) == "ok" and asyncio.run(answer()) == "ok"
    starts = [e for e in sink.events if isinstance(e, RunStart)]
    ends = [e for e in sink.events if isinstance(e, RunEnd)]
    assert [s.session for s in starts] == ["conv-9", "conv-9"]
    assert [e.usage for e in ends] == [
        Usage(inputTokens=3, models=["m"])
    ] * 2  # not summed across calls
