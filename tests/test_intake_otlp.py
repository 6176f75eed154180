"""OTLP JSON to v1 records: one hand-written document for each mapping rule."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests._tree_helpers import cli_golden, run_cli
from tracekit.events import Enter, ErrorInfo, Event, Exit, Node, RunEnd, RunStart
from tracekit.intake import read_trace
from tracekit.intake.otlp.convert import OtlpConverter, otlp_to_events
from tracekit.intake.otlp.decode_json import attributes, hex_id
from tracekit.simulation.simulator import simulate

TRACE = "5b8efff798038103d269b633813fc60c"
MS = 1_000_000  # nanoseconds
BASE = 1_000  # ms added to every time below: a start of 0 is OTLP's "not set"


def value(v: Any) -> dict[str, Any]:
    """An OTLP AnyValue."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": v}


def span(
    sid: str,
    name: str,
    start: int,
    end: int | None,
    parent: str = "",
    attrs: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": sid,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str((BASE + start) * MS),
        "attributes": [{"key": k, "value": value(v)} for k, v in (attrs or {}).items()],
        "status": status or {},
        **extra,
    }
    if end is not None:
        out["endTimeUnixNano"] = str((BASE + end) * MS)
    return out


def agent(
    sid: str, name: str, start: int, end: int | None, parent: str = "", **kw: Any
) -> dict[str, Any]:
    attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
        **kw.pop("attrs", {}),
    }
    return span(sid, f"invoke_agent {name}", start, end, parent, attrs, **kw)


def tool(
    sid: str, name: str, start: int, end: int | None, parent: str, **kw: Any
) -> dict[str, Any]:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    return span(sid, f"execute_tool {name}", start, end, parent, attrs, **kw)


def doc(*spans: dict[str, Any], service: str = "desk") -> dict[str, Any]:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}
        ]
    }


def error(code: str, message: str = "") -> dict[str, Any]:
    return {"code": 2, "message": message or code}


A, T, B, C, S1, S2 = (f"{n:016x}" for n in (0xA1, 0x71, 0xB1, 0xC1, 0x51, 0x52))
COMMON = {"service": "desk", "traceId": TRACE}

# triage -> (tool delegate) -> billing, with a step in each run.
DELEGATION = [
    agent(A, "triage", 100, 200),
    span(S1, "classify", 101, 110, A),
    tool(T, "delegate", 120, 180, A),
    agent(B, "billing", 121, 179, T),
    tool(S2, "fetch_invoice", 122, 130, B),
]


def test_a_delegation_becomes_a_run_with_an_invocation() -> None:
    assert otlp_to_events(doc(*DELEGATION)) == [
        RunStart(ts=1100.0, runId=A, agent="triage", **COMMON),
        Node(ts=1101.0, runId=A, id="classify", ok=True, durationMs=9.0, **COMMON),
        Enter(ts=1121.0, invocationId=B, runId=B, parentRunId=A, agent="billing", node="delegate", **COMMON),
        Node(ts=1122.0, runId=B, id="fetch_invoice", ok=True, durationMs=8.0, call="tool", **COMMON),
        Exit(ts=1179.0, invocationId=B, runId=B, parentRunId=A, agent="billing", node="delegate",
             ok=True, durationMs=58.0, status="ok", **COMMON),
        RunEnd(ts=1200.0, runId=A, ok=True, durationMs=100.0, **COMMON),
    ]  # fmt: skip


def _by_type(events: list[Event], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def test_the_parent_run_is_the_nearest_agent_above_and_the_tool_span_names_the_node() -> None:
    spans = [
        agent(A, "planner", 0, 100),
        tool(T, "ask_writer", 1, 90, A),
        span("00000000000000e1", "POST /agents", 2, 89, T),  # not a tool: the tool above wins
        agent(B, "writer", 3, 88, "00000000000000e1"),
        span("00000000000000e2", "retry", 4, 80, B),
        agent(C, "critic", 5, 70, "00000000000000e2"),  # no tool between: no node
    ]
    events = otlp_to_events(doc(*spans))
    enters = {e.agent: e for e in _by_type(events, Enter)}
    assert (enters["writer"].parentRunId, enters["writer"].node) == (A, "ask_writer")
    # Only a tool span is a node; a plain span between stays the step it is.
    assert (enters["critic"].parentRunId, enters["critic"].node) == (B, None)
    # A span that names a node is no step, nor is what a tool span nests.
    assert [(n.runId, n.id) for n in _by_type(events, Node)] == [(B, "retry")]


def test_a_deep_chain_of_spans_resolves_without_recursion() -> None:
    spans = [agent(A, "root", 0, 10_000)]
    parent = A
    for n in range(1, 5000):
        sid = f"f{n:015x}"  # apart from the ids above
        spans.append(span(sid, f"layer{n}", n, 10_000 - n, parent))
        parent = sid
    spans.append(agent(B, "leaf", 5000, 5001, parent))
    events = otlp_to_events(doc(*spans))
    enter = _by_type(events, Enter)[0]
    assert (enter.parentRunId, enter.node) == (A, None)  # no tool span between
    assert [n.id for n in _by_type(events, Node)] == ["layer1"]  # the rest is inside it


def test_openinference_agents_and_tools() -> None:
    spans = [
        span(
            A, "Router", 0, 50, attrs={"openinference.span.kind": "AGENT", "agent.name": "router"}
        ),
        span(T, "tool", 1, 40, A, {"openinference.span.kind": "TOOL", "tool.name": "ask_docs"}),
        span(B, "DocsAgent", 2, 39, T, {"openinference.span.kind": "AGENT"}),
    ]
    events = otlp_to_events(doc(*spans))
    assert _by_type(events, RunStart)[0].agent == "router"
    enter = _by_type(events, Enter)[0]
    assert (enter.agent, enter.node, enter.parentRunId) == ("DocsAgent", "ask_docs", A)


def test_older_gen_ai_shapes_and_model_calls() -> None:
    spans = [
        span(
            A,
            "agent triage",
            0,
            50,
            attrs={"gen_ai.system": "crewai", "gen_ai.agent.name": "triage"},
        ),
        span(
            B,
            "chat gpt",
            1,
            20,
            A,
            {"gen_ai.operation.name": "chat", "gen_ai.agent.name": "triage"},
        ),
    ]
    events = otlp_to_events(doc(*spans))
    assert [type(e).__name__ for e in events] == ["RunStart", "Node", "RunEnd"]
    assert _by_type(events, Node)[0].id == "chat gpt"


def test_error_code_from_error_type_else_the_status() -> None:
    spans = [
        agent(A, "root", 0, 100, status=error("AGENT_FAILED", "delegated agent billing failed"),
              attrs={"error.type": "AGENT_FAILED"}),
        tool(T, "delegate", 1, 90, A),
        agent(B, "billing", 2, 80, T, attrs={"error.type": "AGENT_FAILED"},
              status={"code": "STATUS_CODE_ERROR", "message": "refunds failed"}),
        tool("00000000000000f1", "ask_refunds", 3, 50, B),
        agent(C, "refunds", 4, 40, "00000000000000f1", status=error("TIMEOUT", "took 30s"),
              attrs={"error.type": "TIMEOUT"}),
        tool("00000000000000f2", "ask_invoices", 51, 60, B),
        agent("00000000000000d1", "invoices", 52, 59, "00000000000000f2", status=error("", "quota exhausted")),
        tool("00000000000000f3", "ask_kb", 61, 62, B),
        agent("00000000000000d2", "kb", 61, 62, "00000000000000f3", status=error("", "boom"),
              events=[{"name": "exception", "attributes": [
                  {"key": "exception.type", "value": {"stringValue": "KeyError"}}]}]),
    ]  # fmt: skip
    events = otlp_to_events(doc(*spans))
    exits = {e.agent: e for e in _by_type(events, Exit)}
    assert exits["refunds"].error == ErrorInfo(code="TIMEOUT", message="took 30s")
    assert exits["invoices"].error == ErrorInfo(code="quota exhausted", message="quota exhausted")
    assert exits["kb"].error == ErrorInfo(code="KeyError", message="boom")
    # AGENT_FAILED wraps the child that failed last (kb, then invoices before it, refunds first).
    billing = exits["billing"]
    assert billing.status == "error" and billing.error is not None
    assert (billing.error.code, billing.error.message) == ("AGENT_FAILED", "refunds failed")
    assert billing.error.cause == exits["kb"].error
    run_end = _by_type(events, RunEnd)[0]
    assert run_end.ok is False and run_end.failure == "agent"
    assert run_end.error is not None and run_end.error.cause == billing.error


def test_refusals_cancellations_and_a_recursion() -> None:
    chain = ["billing", "refunds", "billing"]
    recursion = json.dumps({"code": "AGENT_RECURSION", "message": "circle", "chain": chain})
    failed = {"attrs": {"error.type": "AGENT_RECURSION", "tracekit.error": recursion},
              "status": error("AGENT_RECURSION", "circle")}  # fmt: skip
    spans = [
        agent(A, "billing", 0, 100, **failed),
        tool(T, "ask_refunds", 1, 90, A),
        agent(B, "refunds", 2, 80, T, **failed),
        tool("00000000000000f1", "ask_billing", 10, 10, B),
        agent(C, "billing", 10, 10, "00000000000000f1", **failed),  # the refused call itself
        tool("00000000000000f2", "spawn_subagent", 3, 4, B),
        agent("00000000000000d1", "kb", 4, 10, "00000000000000f2", status=error("CANCELLED", "cancelled"),
              attrs={"error.type": "CANCELLED"}),
    ]  # fmt: skip
    events = otlp_to_events(doc(*spans))
    exits = {e.invocationId: e for e in _by_type(events, Exit)}
    assert exits[C].status == "refused" and exits[C].error is not None
    assert exits[C].error.chain == chain
    assert exits[B].status == "error"  # it rethrew the refusal: it had run
    assert exits["00000000000000d1"].status == "cancelled"
    assert {e.agent: e.kind for e in _by_type(events, Enter)}["kb"] == "subagent"
    run_end = _by_type(events, RunEnd)[0]
    assert run_end.failure == "delegation" and run_end.error == exits[C].error


def test_handoff_kind_from_the_tool_name() -> None:
    spans = [
        agent(A, "triage", 0, 10),
        tool(T, "transfer_to_billing", 1, 9, A),
        agent(B, "billing", 2, 8, T),
    ]
    assert _by_type(otlp_to_events(doc(*spans)), Enter)[0].kind == "handoff"


def test_tracekit_attributes_win() -> None:
    error_json = json.dumps({"code": "AGENT_NOT_ALLOWED", "message": "not yours", "chain": None})
    spans = [
        span(A, "run triage", 0, 100, attrs={"tracekit.run_id": "run-1", "tracekit.root": True,
             "gen_ai.agent.name": "triage", "tracekit.status": "error", "tracekit.failure": "agent",
             "tracekit.error": json.dumps({"code": "AGENT_FAILED", "message": "x",
                                           "cause": {"code": "AGENT_NOT_ALLOWED"}})}),
        span(T, "delegate", 1, 90, A, {"tracekit.run_id": "run-1", "tracekit.step": "delegate",
                                       "tracekit.delegated": True}),
        span(S1, "decide", 1, 2, A, {"tracekit.run_id": "run-1", "tracekit.step": "decide/sub"}),
        agent(B, "payments", 5, 5, T, attrs={
            "tracekit.run_id": "run-2", "tracekit.invocation_id": "inv-2",
            "tracekit.parent_run_id": "run-1", "tracekit.node": "hand_over", "tracekit.kind": "handoff",
            "tracekit.status": "refused", "tracekit.error": error_json, "error.type": "IGNORED"},
            status=error("IGNORED")),
    ]  # fmt: skip
    events = otlp_to_events(doc(*spans))
    assert _by_type(events, RunStart)[0].runId == "run-1"
    assert [(n.runId, n.id) for n in _by_type(events, Node)] == [("run-1", "decide/sub")]
    enter, exit_ = _by_type(events, Enter)[0], _by_type(events, Exit)[0]
    assert (enter.invocationId, enter.runId, enter.parentRunId) == ("inv-2", "run-2", "run-1")
    assert (enter.node, enter.kind) == ("hand_over", "handoff")
    assert exit_.status == "refused" and exit_.error == ErrorInfo(
        code="AGENT_NOT_ALLOWED", message="not yours"
    )
    run_end = _by_type(events, RunEnd)[0]
    assert run_end.ok is False and run_end.failure == "agent" and run_end.error is not None
    assert run_end.error.cause == ErrorInfo(code="AGENT_NOT_ALLOWED")


def test_spans_of_one_trace_over_many_lines(tmp_path: Path) -> None:
    whole = otlp_to_events(doc(*DELEGATION))
    converter = OtlpConverter()
    for part in (DELEGATION[3:], DELEGATION[1:3], DELEGATION[:1]):  # children first, root last
        converter.feed(doc(*part))
    assert converter.finish() == whole
    path = tmp_path / "spans.otlp.jsonl"
    lines = [json.dumps(doc(*part)) for part in (DELEGATION[4:], DELEGATION[:2], DELEGATION[2:4])]
    path.write_text("\n".join(lines) + "\n")
    result = read_trace(path)
    assert (result.format, result.events, result.bad_lines, result.lines_read) == (
        "otlp",
        whole,
        [],
        3,
    )


def _b64(hex_text: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_text)).decode()


def test_base64_ids_read_as_hex() -> None:
    encoded = [
        {**s, "traceId": _b64(s["traceId"]), "spanId": _b64(s["spanId"]),
         "parentSpanId": _b64(s["parentSpanId"]) if s["parentSpanId"] else ""}
        for s in DELEGATION
    ]  # fmt: skip
    assert otlp_to_events(doc(*encoded)) == otlp_to_events(doc(*DELEGATION))
    assert hex_id("W47/95gDgQPSabYzgT/GDA==") == TRACE
    with pytest.raises(ValueError, match="neither hex nor base64"):
        hex_id("not an id!")


def test_a_span_without_end_is_an_enter_without_exit() -> None:
    spans = [
        agent(A, "triage", 0, None),
        tool(T, "delegate", 1, None, A),
        agent(B, "billing", 2, None, T),
    ]
    spans[2]["endTimeUnixNano"] = "0"
    events = otlp_to_events(doc(*spans))
    assert [type(e).__name__ for e in events] == ["RunStart", "Enter"]
    # A later export of the same span with its end completes it.
    converter = OtlpConverter()
    converter.feed(doc(*spans))
    converter.feed(doc(agent(B, "billing", 2, 8, T)))
    assert [type(e).__name__ for e in converter.finish()] == ["RunStart", "Enter", "Exit"]


def test_numbers_snake_case_and_instrumentation_library_spans() -> None:
    raw = agent(
        A, "triage", 0, 10, attrs={"retries": 3, "ratio": 0.5, "tags": ["a", "b"], "flag": True}
    )
    raw["startTimeUnixNano"], raw["endTimeUnixNano"] = BASE * MS, (BASE + 10) * MS  # numbers
    raw["span_id"] = raw.pop("spanId")
    document = {"resource_spans": [{"instrumentationLibrarySpans": [{"spans": [raw]}]}]}
    events = otlp_to_events(document)
    assert [type(e).__name__ for e in events] == ["RunStart", "RunEnd"]
    assert events[1].durationMs == 10.0 and events[0].service is None


def test_spans_outside_any_agent_are_skipped() -> None:
    converter = OtlpConverter()
    converter.feed(doc(span("00000000000000e9", "GET /health", 0, 1), *DELEGATION))
    assert len(converter.finish()) == 6 and converter.counts.outside == 1


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"resourceSpans": {}}, "resourceSpans is not a list"),
        ({"traces": []}, "no resourceSpans"),
        (doc({**DELEGATION[0], "spanId": ""}), "has no spanId"),
        (doc({**DELEGATION[0], "parentSpanId": "zz"}), "neither hex nor base64"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}, "malformed OTLP"),
    ],
)
def test_a_malformed_document_is_refused_whole(bad: dict[str, Any], reason: str) -> None:
    converter = OtlpConverter()
    with pytest.raises(ValueError, match=reason):
        converter.feed(bad)
    assert converter.finish() == []


@pytest.mark.parametrize("field", ["startTimeUnixNano", "endTimeUnixNano"])
def test_a_time_out_of_range_refuses_only_its_span_naming_why(field: str) -> None:
    late = {**DELEGATION[2], field: str(10**26)}
    later = {**DELEGATION[4], field: "soon"}
    converter = OtlpConverter()
    fed = converter.feed_json(json.dumps(doc(DELEGATION[0], late, DELEGATION[3], later)), line=7)
    assert fed == 4 and converter.pending == 2
    reasons = [(line, reason) for line, _, reason in converter.take_rejects()]
    assert reasons == [
        (7, f"span {T}: {field} {10**26} is out of range (0 to 253402300799999000000, the years 1970 to 9999)"),
        (7, f"span {DELEGATION[4]['spanId']}: {field} 'soon' is not a whole number"),
    ]  # fmt: skip
    assert type(converter.finish()[0]).__name__ == "RunStart"


def test_a_bad_line_is_reported_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "spans.otlp.jsonl"
    good = [json.dumps(doc(*DELEGATION[:3])), json.dumps(doc(*DELEGATION[3:]))]
    path.write_text(good[0] + "\n" + '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}\n'
                    + "[1, 2]\n" + good[1] + "\n")  # fmt: skip
    result = read_trace(path)
    assert result.events == otlp_to_events(doc(*DELEGATION))
    assert [(e.line, e.reason.split(":")[0]) for e in result.bad_lines] == [
        (2, "not OTLP JSON"),
        (3, "not OTLP JSON"),
    ]
    assert "has no spanId" in result.bad_lines[0].reason
    assert result.lines_read == 4


# -- agreement with tracekit's own SDK ------------------------------------------


def _otlp_from_sdk(spans: Any) -> dict[str, Any]:
    """What an OTLP JSON exporter writes for the SDK's finished spans."""
    out = []
    for s in spans:
        parent = format(s.parent.span_id, "016x") if s.parent is not None else ""
        raw = span(
            format(s.context.span_id, "016x"), s.name, 0, 0, parent, dict(s.attributes or {})
        )
        raw["traceId"] = format(s.context.trace_id, "032x")
        raw["startTimeUnixNano"], raw["endTimeUnixNano"] = str(s.start_time), str(s.end_time)
        raw["status"] = {"code": s.status.status_code.value, "message": s.status.description or ""}
        out.append(raw)
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": out}]}]}


def _shape(event: Event) -> str:
    """A record without its writer's counter and its times (compared apart)."""
    skip = ("seq", "ts", "durationMs")
    fields = {k: getattr(event, k) for k in event.__struct_fields__ if k not in skip}
    return f"{type(event).__name__} {sorted(fields.items(), key=str)}"


def test_the_sdks_spans_read_back_as_its_own_records() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracekit.errors import AgentRecursionError
    from tracekit.sdk import AgentTracer, Guards, MemorySink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = MemorySink()
    tk = AgentTracer(sink, tracer_provider=provider, guards=Guards())
    with tk.run("front_desk"):
        with tk.step("sort"):
            pass
        with tk.delegate("billing", node="hand_over"), tk.step("check"):
            pass
        try:
            with tk.delegate("billing", node="escalate"), tk.delegate("front_desk"):
                pass
        except AgentRecursionError:
            pass
    events = otlp_to_events(_otlp_from_sdk(exporter.get_finished_spans()))
    ours = sorted(events, key=lambda e: (_shape(e), e.ts))
    theirs = sorted(sink.events, key=lambda e: (_shape(e), e.ts))
    assert list(map(_shape, ours)) == list(map(_shape, theirs))
    # The SDK divides nanoseconds by 1e6 (off in the last bits); the reader is exact.
    assert all(abs(a.ts - b.ts) < 1e-3 for a, b in zip(ours, theirs, strict=True))
    assert any(isinstance(e, Exit) and e.status == "refused" for e in events)


def test_the_fast_path_and_the_dict_path_agree(tmp_path: Path) -> None:
    encoded = [{**s, "spanId": _b64(s["spanId"])} for s in DELEGATION]  # base64 ids
    snake = {"resource_spans": [{"scope_spans": [{"spans": [
        {**DELEGATION[0], "span_id": DELEGATION[0]["spanId"], "spanId": None}]}]}]}  # fmt: skip
    odd = agent(C, "odd", 5, 6, attrs={"n": 3, "x": 1.5, "flags": [True, False]})
    odd["attributes"].append({"key": "nested", "value": {"kvlistValue": {"values": [
        {"key": "k", "value": {"intValue": 7}}]}}})  # fmt: skip
    docs = [doc(*encoded), snake, doc(odd)]
    path = tmp_path / "mixed.otlp.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    by_dicts = OtlpConverter()
    for d in docs:
        by_dicts.feed(d)
    assert read_trace(path).events == by_dicts.finish()
    fast = OtlpConverter()
    assert fast.feed_json(json.dumps(doc(odd))) == 1
    # Only the attributes the mapping reads are kept; values keep their types.
    assert fast.assembler.take([TRACE])[(TRACE, C)].attrs == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "odd",
    }
    assert attributes(odd["attributes"]) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "odd",
        "n": 3,
        "x": 1.5,
        "flags": [True, False],
        "nested": {"k": 7},
    }


def test_streaming_with_lines_lets_complete_traces_go(tmp_path: Path) -> None:
    path = tmp_path / "fleet.otlp.jsonl"
    simulate(path, runs=120, seed=2, format="otlp")
    lines = path.read_bytes().splitlines()
    whole = OtlpConverter()
    streamed = OtlpConverter()
    out: list[tuple[int, Event]] = []
    most = 0
    for number, line in enumerate(lines, 1):
        whole.feed_json(line, line=number)
        streamed.feed_json(line, line=number)
        out.extend(streamed.take_complete(idle=1))
        most = max(most, streamed.pending)
    out.extend(streamed.finish_lines())
    expected = whole.finish_lines()
    assert sorted(out, key=repr) == sorted(expected, key=repr)
    assert most < 3 * 512  # held spans stay bounded: finished traces were let go
    assert {line for line, _ in expected} == set(range(1, len(lines) + 1))
    # a record's line holds its span
    for line, event in expected[:50]:
        assert getattr(event, "runId", "").encode() in lines[line - 1]


SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


@pytest.mark.parametrize("name", ["escalation_desk.otlp.json", "escalation_desk.otlp.jsonl"])
def test_the_otlp_sample_prints_the_tree_of_its_v1_twin(name: str) -> None:
    result = run_cli("tree", str(SAMPLES / "otlp" / name))
    # Nothing odd; the one note is where the spans went, and it adds up.
    assert result.returncode == 0
    assert result.stderr == "14 spans read = 4 agents + 9 steps + 1 wrapper + 0 rejected\n"
    assert result.stdout == cli_golden(SAMPLES / "escalation_desk.tree.txt")


# -- spans whose parent links loop ------------------------------------------------

L1, L2 = f"{0xE1:016x}", f"{0xE2:016x}"
LOOP_REASON = f"its parent links loop ({L1} -> {L2} -> {L1})"


def _loop_trace(path: Path) -> Path:
    """The delegation on one line; on the next, two agent spans each the other's parent."""
    looped = [agent(L1, "left", 140, 150, L2), agent(L2, "right", 141, 149, L1)]
    path.write_text(json.dumps(doc(*DELEGATION)) + "\n" + json.dumps(doc(*looped)) + "\n")
    return path


def test_tree_reports_the_spans_of_a_parent_loop_and_draws_the_rest(tmp_path: Path) -> None:
    path = _loop_trace(tmp_path / "loop.otlp.jsonl")
    result = run_cli("tree", str(path))
    assert result.returncode == 0, result.stderr
    alone = run_cli("tree", "-", input=(json.dumps(doc(*DELEGATION)) + "\n").encode())
    assert result.stdout == alone.stdout and "delegate -> billing" in result.stdout
    assert "left" not in result.stdout and "right" not in result.stdout
    assert f"  {path}:2: span {L1}: {LOOP_REASON}" in result.stderr.splitlines()
    assert f"  {path}:2: span {L2}: {LOOP_REASON}" in result.stderr.splitlines()
    strict = run_cli("tree", str(path), "--strict")
    assert strict.returncode == 2
    assert f"span {L1}: {LOOP_REASON}" in strict.stderr
    assert "Traceback" not in strict.stderr
