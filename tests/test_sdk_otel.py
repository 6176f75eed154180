"""tracekit's invocations are real OpenTelemetry spans, on the user's provider."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from tracekit.errors import AgentError, AgentRecursionError
from tracekit.events import Enter, Exit, Node
from tracekit.intake.otlp.convert import otlp_to_events
from tracekit.sdk import AgentTracer, Guards, MemorySink
from tracekit.tree import agent_tree
from tracekit.tree.text import describe_agent_tree


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_spans_carry_genai_and_tracekit_attributes() -> None:
    provider, exporter = _provider()
    sink = MemorySink()
    tk = AgentTracer(sink, tracer_provider=provider)
    with tk.run("orchestrator"), tk.delegate("sql", node="delegate") as inv:
        user_span = provider.get_tracer("mine").start_span("llm call")
        user_span.end()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {
        "invoke_agent orchestrator",
        "execute_tool delegate",
        "invoke_agent sql",
        "llm call",
    }
    sql = spans["invoke_agent sql"]
    attrs = dict(sql.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "sql"
    assert attrs["tracekit.run_id"] == inv.run_id
    assert attrs["tracekit.invocation_id"] == inv.invocation_id
    assert attrs["tracekit.parent_run_id"] == inv.parent_run_id
    assert (attrs["tracekit.node"], attrs["tracekit.kind"]) == ("delegate", "delegate")
    # the user's own span nests under the invocation, the invocation under the run
    assert spans["llm call"].parent is not None
    assert spans["llm call"].parent.span_id == sql.context.span_id
    # the call is the caller's execute_tool span (GenAI transfer), the invocation under it
    tool = spans["execute_tool delegate"]
    assert sql.parent is not None and tool.parent is not None
    assert sql.parent.span_id == tool.context.span_id
    assert tool.parent.span_id == spans["invoke_agent orchestrator"].context.span_id
    # the user's span is not turned into a tracekit record
    assert len(sink.events) == 4
    enter = next(e for e in sink.events if isinstance(e, Enter))
    assert enter.traceId == format(sql.context.trace_id, "032x")


def test_error_spans_have_error_status_and_type() -> None:
    provider, exporter = _provider()
    tk = AgentTracer(MemorySink(), tracer_provider=provider, guards=Guards())
    try:
        with tk.run("orders"), tk.delegate("billing"), tk.delegate("orders"):
            pass
    except AgentRecursionError:
        pass
    for span in exporter.get_finished_spans():
        assert span.status.status_code == trace.StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "AGENT_RECURSION"


def test_global_provider_is_left_alone() -> None:
    before = trace.get_tracer_provider()
    AgentTracer(MemorySink())
    assert trace.get_tracer_provider() is before


def test_sampled_out_spans_still_write_records() -> None:
    provider = TracerProvider(sampler=ALWAYS_OFF)
    sink = MemorySink()
    tk = AgentTracer(sink, tracer_provider=provider)
    with tk.run("desk"), tk.delegate("billing") as inv:
        inv.mark_pending()
    assert [type(e).__name__ for e in sink.events] == ["RunStart", "Enter", "Exit", "RunEnd"]
    exit_ = sink.events[2]
    assert isinstance(exit_, Exit) and exit_.status == "pending"
    assert [e.seq for e in sink.events] == [1, 2, 3, 4]


def test_two_tracers_on_one_provider_keep_their_records_apart() -> None:
    provider, _ = _provider()
    one, two = MemorySink(), MemorySink()
    tk1 = AgentTracer(one, tracer_provider=provider)
    tk2 = AgentTracer(two, tracer_provider=provider)
    with tk1.run("a"):
        pass
    with tk2.run("b"):
        pass
    assert [e.agent for e in one.events if hasattr(e, "agent")] == ["a"]
    assert [e.agent for e in two.events if hasattr(e, "agent")] == ["b"]


def _otlp(spans: Any) -> dict[str, Any]:
    """The spans as one OTLP JSON ``TracesData`` document, as a collector writes it."""

    def value(v: object) -> dict[str, object]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": str(v)}

    def span(s: Any) -> dict[str, object]:
        out: dict[str, object] = {
            "traceId": format(s.context.trace_id, "032x"),
            "spanId": format(s.context.span_id, "016x"),
            "name": s.name,
            "startTimeUnixNano": str(s.start_time),
            "endTimeUnixNano": str(s.end_time),
            "attributes": [{"key": k, "value": value(v)} for k, v in s.attributes.items()],
            "status": {"code": s.status.status_code.value, "message": s.status.description or ""},
        }
        if s.parent is not None:
            out["parentSpanId"] = format(s.parent.span_id, "016x")
        return out

    return {"resourceSpans": [{"scopeSpans": [{"spans": [span(s) for s in spans]}]}]}


def test_an_otel_pipeline_sees_the_same_tree() -> None:
    """Spans exported by the user's pipeline read back as the JSONL records' tree."""
    provider, exporter = _provider()
    sink = MemorySink()
    tk = AgentTracer(sink, tracer_provider=provider, guards=Guards(registry={"a", "b", "c"}))
    with tk.run("a"):
        with tk.step("decide"):
            pass
        with tk.delegate("b", node="delegate"), tk.step("work"):
            pass
        try:
            with tk.delegate("payments", node="delegate", allowed=["b", "c"]):
                pass
        except AgentError:
            pass
        try:
            with tk.delegate("c", node="escalate"), tk.delegate("a"):
                pass
        except AgentRecursionError:
            pass
    from_records = describe_agent_tree(agent_tree(sink.events))
    from_otlp = describe_agent_tree(
        agent_tree(otlp_to_events(_otlp(exporter.get_finished_spans())))
    )
    assert from_otlp == from_records
    assert "refused AGENT_NOT_ALLOWED" in from_records and "refused AGENT_RECURSION" in from_records


def test_a_no_op_provider_still_gets_records() -> None:
    """Without an SDK provider (OTel's API default), tracekit writes the records itself."""
    sink = MemorySink()
    tk = AgentTracer(sink, tracer_provider=trace.NoOpTracerProvider())
    with tk.run("desk"), tk.delegate("billing"), tk.step("sort"):
        pass
    assert [type(e).__name__ for e in sink.events] == [
        "RunStart",
        "Enter",
        "Node",
        "Exit",
        "RunEnd",
    ]
    node = sink.events[2]
    assert isinstance(node, Node) and node.id == "billing/sort"


_SET_GLOBAL = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from tracekit.sdk import AgentTracer, MemorySink
provider = TracerProvider()
AgentTracer(MemorySink(), tracer_provider=provider, set_global=True)
print(trace.get_tracer_provider() is provider)
"""


def test_set_global_installs_the_provider() -> None:
    # In a child process: the global provider can be set once per process.
    out = subprocess.run(
        [sys.executable, "-c", _SET_GLOBAL], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
