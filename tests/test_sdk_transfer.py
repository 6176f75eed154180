"""tracekit's spans speak the GenAI conventions: transfers, conversation ids, usage."""

from __future__ import annotations

import re
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_sdk_otel import _otlp

from tracekit.errors import AgentError
from tracekit.events import RunStart
from tracekit.intake.otlp.convert import otlp_to_events
from tracekit.sdk import AgentTracer, Guards, MemorySink
from tracekit.tree import agent_tree
from tracekit.tree.text import describe_agent_tree


def _traced(**kw: Any) -> tuple[AgentTracer, MemorySink, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = MemorySink()
    return AgentTracer(sink, tracer_provider=provider, **kw), sink, exporter


def _by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_a_handoff_is_the_callers_execute_tool_span_passing_control() -> None:
    tk, _, exporter = _traced()
    with tk.run("triage"), tk.handoff("billing", node="transfer_to_billing"):
        pass
    spans = _by_name(exporter)
    tool = spans["execute_tool transfer_to_billing"]
    attrs = dict(tool.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "transfer_to_billing"
    assert attrs["gen_ai.agent.name"] == "triage"  # the source agent executes the tool
    assert attrs["gen_ai.transfer.mode"] == "pass_control"
    assert attrs["gen_ai.transfer.target.name"] == "billing"
    assert attrs["gen_ai.transfer.target.type"] == "agent"
    target = spans["invoke_agent billing"]
    assert target.parent.span_id == tool.context.span_id
    assert tool.parent.span_id == spans["invoke_agent triage"].context.span_id
    assert tool.status.status_code == trace.StatusCode.UNSET


@pytest.mark.parametrize("kind", ["delegate", "subagent"])
def test_a_delegation_or_subagent_returns_to_its_caller(kind: str) -> None:
    tk, _, exporter = _traced()
    with tk.run("desk"), tk.step("route"), tk.invoke("sql", kind=kind, node="ask_sql"):  # type: ignore[arg-type]
        pass
    spans = _by_name(exporter)
    attrs = dict(spans["execute_tool ask_sql"].attributes or {})
    assert attrs["gen_ai.transfer.mode"] == "return_to_caller"
    assert (attrs["gen_ai.transfer.target.name"], attrs["gen_ai.agent.name"]) == ("sql", "desk")


def test_the_caller_is_the_innermost_agent() -> None:
    tk, _, exporter = _traced()
    with tk.run("a"), tk.delegate("b", node="ask_b"), tk.handoff("c", node="transfer_to_c"):
        pass
    attrs = dict(_by_name(exporter)["execute_tool transfer_to_c"].attributes or {})
    assert (attrs["gen_ai.agent.name"], attrs["gen_ai.transfer.target.name"]) == ("b", "c")


def test_a_refused_or_failed_call_fails_its_tool_span() -> None:
    tk, _, exporter = _traced(guards=Guards(wrap_failures=False))
    with tk.run("desk"):
        with pytest.raises(AgentError):
            with tk.delegate("payments", node="ask_payments", allowed=["sql"]):
                pass
        with pytest.raises(RuntimeError):
            with tk.delegate("sql", node="ask_sql"):
                raise RuntimeError("db down")
    spans = _by_name(exporter)
    refused = spans["execute_tool ask_payments"]
    assert refused.status.status_code == trace.StatusCode.ERROR
    assert (refused.attributes or {})["error.type"] == "AGENT_NOT_ALLOWED"
    failed = spans["execute_tool ask_sql"]
    assert (failed.attributes or {})["error.type"] == "RuntimeError"
    assert failed.end_time >= spans["invoke_agent sql"].end_time


def test_a_call_without_a_node_has_no_tool_span() -> None:
    tk, _, exporter = _traced()
    with tk.run("desk"), tk.delegate("sql"):
        pass
    assert set(_by_name(exporter)) == {"invoke_agent desk", "invoke_agent sql"}


def test_a_private_provider_makes_no_transfer_span() -> None:
    """Nobody else can read tracekit's own provider: the span would be pure cost."""
    tk = AgentTracer(MemorySink())
    assert tk._transfer_spans is False
    assert AgentTracer(MemorySink(), tracer_provider=TracerProvider())._transfer_spans is True


def test_transfer_spans_can_be_turned_off() -> None:
    tk, sink, exporter = _traced(transfer_spans=False)
    with tk.run("triage"), tk.handoff("billing", node="transfer_to_billing"):
        pass
    assert set(_by_name(exporter)) == {"invoke_agent triage", "invoke_agent billing"}
    assert len(sink.events) == 4


def test_the_session_is_the_conversation_id_of_every_span() -> None:
    tk, sink, exporter = _traced()
    with tk.run("triage", session="conv-7"):
        with tk.step("lookup", call="tool"):
            pass
        with tk.handoff("billing", node="transfer_to_billing"), tk.step("refund"):
            pass
    spans = exporter.get_finished_spans()
    assert len(spans) == 5
    assert {(s.attributes or {}).get("gen_ai.conversation.id") for s in spans} == {"conv-7"}
    start = sink.events[0]
    assert isinstance(start, RunStart) and start.session == "conv-7"


def test_without_a_session_no_conversation_id() -> None:
    tk, sink, exporter = _traced()
    with tk.run("desk"), tk.delegate("sql", node="ask"):
        pass
    assert all(
        "gen_ai.conversation.id" not in (s.attributes or {}) for s in exporter.get_finished_spans()
    )
    assert isinstance(sink.events[0], RunStart) and sink.events[0].session is None


def test_a_tool_step_is_an_execute_tool_span() -> None:
    tk, _, exporter = _traced()
    with tk.run("desk"), tk.step("lookup_invoice", call="tool"):
        pass
    attrs = dict(_by_name(exporter)["lookup_invoice"].attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "lookup_invoice"


def test_usage_is_on_the_invocation_span() -> None:
    tk, _, exporter = _traced()
    with tk.run("desk"), tk.delegate("sql", node="ask") as inv:
        inv.usage(input_tokens=100, output_tokens=20, model="m1")
    attrs = dict(_by_name(exporter)["invoke_agent sql"].attributes or {})
    assert attrs["gen_ai.usage.input_tokens"] == 100
    assert attrs["gen_ai.usage.output_tokens"] == 20
    assert attrs["gen_ai.request.model"] == "m1"
    assert list(attrs["tracekit.models"]) == ["m1"]


def test_exported_as_otlp_the_run_still_reads_into_the_same_tree() -> None:
    """The transfer spans are edges, not steps: tracekit's OTLP reader shows the same tree."""
    tk, sink, exporter = _traced(guards=Guards(registry={"triage", "billing", "refunds", "sql"}))
    with tk.run("triage", session="conv-1") as run:
        with tk.step("greet"):
            tk.usage(input_tokens=5, output_tokens=1, model="m")
        with tk.handoff("billing", node="transfer_to_billing"):
            with tk.step("lookup", call="tool"):
                pass
            with tk.step("route"), tk.delegate("sql", node="ask_sql") as sql:
                sql.usage(input_tokens=10, model="m")
            try:
                with tk.delegate("payments", node="ask_payments", allowed=["refunds"]):
                    pass
            except AgentError:
                pass
            with tk.handoff("refunds", node="transfer_to_refunds"), tk.step("pay"):
                pass
        run.usage(output_tokens=3)
    from_records = describe_agent_tree(agent_tree(sink.events))
    from_otlp = describe_agent_tree(
        agent_tree(otlp_to_events(_otlp(exporter.get_finished_spans())))
    )
    assert from_otlp == from_records
    assert re.sub(r", [0-9.]+(ms|s|m)\)", ")", from_records) == (
        "greet\n"
        "transfer_to_billing -> billing (handoff, ok)\n"
        "  lookup\n"
        "  route\n"
        "  ask_sql -> sql (ok)\n"
        "  ask_payments -> payments (refused AGENT_NOT_ALLOWED)\n"
        "  transfer_to_refunds -> refunds (handoff, ok)\n"
        "    pay"
    )
