"""The spans table from OTLP JSON and protobuf, and what the probe lets the SQL take."""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracekit.intake.otlp.columns import SPAN_COLUMNS, decode_lines, map_spans, proto_spans
from tracekit.intake.otlp.columns.probe import delegation, marker, verdict

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _kv(key: str, value: object) -> dict[str, object]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(
    span_id: str, parent: str, name: str, attrs: list[dict[str, object]]
) -> dict[str, object]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": "1000000",
        "endTimeUnixNano": "3000000",
        "attributes": attrs,
    }


SPANS = [
    _span(
        "00000000000000a1",
        "",
        "invoke_agent triage",
        [
            _kv("gen_ai.operation.name", "invoke_agent"),
            _kv("gen_ai.agent.name", "triage"),
            _kv("gen_ai.usage.input_tokens", 12),
        ],
    ),
    _span("00000000000000b2", "00000000000000a1", "think", []),
]


def _doc(spans: list[dict[str, object]], key: str = "resourceSpans") -> str:
    return json.dumps(
        {
            key: [
                {
                    "resource": {"attributes": [_kv("service.name", "desk")]},
                    "scopeSpans": [{"spans": spans}],
                }
            ]
        }
    )


def _decode(*texts: str) -> tuple[bool, duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    table = pa.table({"line": list(range(1, len(texts) + 1)), "text": list(texts)})
    return decode_lines(con, table), con


def test_json_lines_become_one_row_a_span() -> None:
    exact, con = _decode(_doc(SPANS))
    rows = con.execute(
        "SELECT line, service, id, parent, name, op, agent, tokens_in, end_ns FROM _otlp_spans"
        " ORDER BY id"
    ).fetchall()
    assert exact
    assert rows == [
        (
            1,
            "desk",
            "00000000000000a1",
            "",
            "invoke_agent triage",
            "invoke_agent",
            "triage",
            12,
            3000000,
        ),
        (1, "desk", "00000000000000b2", "00000000000000a1", "think", None, None, None, 3000000),
    ]
    names = [r[0] for r in con.execute("DESCRIBE _otlp_spans").fetchall()]
    assert [n for n in names if n != "exact"] == list(SPAN_COLUMNS)


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        _doc(SPANS, key="resource_spans"),
        _doc([{**SPANS[0], "spanId": "00000000000000A1"}]),  # upper case: the decoder lowers it
        _doc([{**SPANS[0], "startTimeUnixNano": "1e6"}]),
        _doc([{**SPANS[0], "startTimeUnixNano": "99999999999999999999"}]),
    ],
)
def test_a_line_not_read_exactly_sends_the_file_per_span(text: str) -> None:
    exact, _ = _decode(_doc(SPANS), text)
    assert not exact


def test_common_shape_mapped_in_sql() -> None:
    _, con = _decode(_doc(SPANS))
    assert map_spans(con) == (1, 1)
    texts = [
        r[0] for r in con.execute("SELECT text FROM _otlp_records ORDER BY ts, rank").fetchall()
    ]
    assert texts[0].startswith('{"type":"run.start","ts":1.0,"service":"desk"')
    assert '"usage":{"inputTokens":12}' in texts[-1]


def test_a_failed_span_leaves_its_trace_to_the_converter() -> None:
    failed = {**SPANS[1], "status": {"code": 2, "message": "boom"}}
    _, con = _decode(_doc([SPANS[0], failed]))
    assert map_spans(con) == (0, 0)
    assert con.execute("SELECT count(*) FROM _otlp_records").fetchall() == [(0,)]


def test_probe_reads_names_as_the_converter_does() -> None:
    assert verdict("agent", "invoke_agent triage", "triage")
    assert verdict("step", "think", "")
    assert not verdict("step", "turn", "")  # a wrapper, not a step
    assert not verdict("step", "", "")  # named after its id
    assert delegation("execute_tool ask", "ask", "invoke_agent b", "b") == ("delegate", "")
    assert (
        delegation("execute_tool transfer_to_b", "transfer_to_b", "invoke_agent b", "b")[0]
        == "handoff"
    )
    assert marker("tool", "execute_tool handoff", "handoff")[0]
    assert marker("tool", "execute_tool lookup", "lookup") == (False, None)


def test_protobuf_bodies_give_the_json_table() -> None:
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    service = resource.resource.attributes.add()
    service.key, service.value.string_value = "service.name", "desk"
    for raw in SPANS:
        span = resource.scope_spans.add().spans.add()
        span.trace_id, span.span_id = bytes.fromhex(TRACE), bytes.fromhex(str(raw["spanId"]))
        span.parent_span_id = bytes.fromhex(str(raw["parentSpanId"]))
        span.name, span.start_time_unix_nano, span.end_time_unix_nano = (
            str(raw["name"]),
            1000000,
            3000000,
        )
        for kv in raw["attributes"]:  # type: ignore[attr-defined]
            attr = span.attributes.add()
            attr.key = kv["key"]
            if "intValue" in kv["value"]:
                attr.value.int_value = int(kv["value"]["intValue"])
            else:
                attr.value.string_value = kv["value"]["stringValue"]
    table = proto_spans([(1, request.SerializeToString())])
    _, con = _decode(_doc(SPANS))
    columns = [
        "line",
        "service",
        "trace",
        "id",
        "parent",
        "name",
        "start_ns",
        "end_ns",
        "op",
        "agent",
        "tokens_in",
        "typed",
        "others",
        "events",
    ]
    from_json = con.execute(f"SELECT {', '.join(columns)} FROM _otlp_spans ORDER BY id").fetchall()
    con.register("_given", table)
    from_proto = con.execute(f"SELECT {', '.join(columns)} FROM _given ORDER BY id").fetchall()
    assert from_proto == from_json
    with pytest.raises(ValueError, match="not an OTLP protobuf"):
        proto_spans([(1, b"\xff\xff")])
