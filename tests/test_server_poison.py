"""No span stops the collector: values checked at the door, each poison costs its own rejection.

Each poison found against the collector (a token count of Infinity, integers
past 64 bits, a span that ends before it starts or lasts 527 years, a name of
megabytes) is sent to a live server over loopback, in OTLP/JSON and in
OTLP/protobuf; each is answered 200 with the span refused alone (or its string
cut), never a 500, and a control trace sent after each is stored within
seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from _server_helpers import Server, send_control, start

JSON = {"Content-Type": "application/json"}
PROTOBUF = {"Content-Type": "application/x-protobuf"}
BIG = 2**64 + 12345  # past what any 64-bit field holds


def _span(n: int, attrs: list[dict[str, Any]], **times: Any) -> dict[str, Any]:
    return {
        "traceId": f"ab{n:030x}",
        "spanId": f"ab{n:014x}",
        "name": "invoke_agent poisoned",
        "startTimeUnixNano": times.get("start", "1700000000000000000"),
        "endTimeUnixNano": times.get("end", "1700000001000000000"),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "poisoned"}},
            *attrs,
        ],
    }


def _tokens(value: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": "gen_ai.usage.input_tokens", "value": value}]


def _body(span: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


#: (what, span, the words of its rejection)
POISONS: list[tuple[str, dict[str, Any], str]] = [
    ("tokens Infinity", _span(1, _tokens({"doubleValue": "Infinity"})), "finite number"),
    ("tokens NaN", _span(2, _tokens({"doubleValue": "NaN"})), "finite number"),
    ("tokens past 2^64", _span(3, _tokens({"intValue": BIG})), "out of range"),
    ("tokens negative", _span(4, _tokens({"intValue": "-5"})), "out of range"),
    ("end past 2^64", _span(5, [], end=BIG), "over the limit of 31 days"),
    ("end past year 9999", _span(10, [], end=10**21), "out of range"),
    ("end 2^64-1: 527 years", _span(6, [], end=2**64 - 1), "over the limit of 31 days"),
    ("ends before it starts", _span(7, [], end="1699999996400000000"), "ends before it starts"),
    ("start Infinity", _span(8, [], start="Infinity"), "not a whole number"),
    (
        "an int past 64 bits",
        _span(9, [{"key": "metadata", "value": {"intValue": str(BIG)}}]),
        "past a 64-bit integer",
    ),
]


def _stored(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _refused(server: Server, body: bytes, headers: dict[str, str]) -> str:
    status, reply, _ = server.post("/v1/traces", body, headers)
    assert status == 200, (status, reply[:300])
    if headers is PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        answer = ExportTraceServiceResponse.FromString(reply)
        assert answer.partial_success.rejected_spans == 1
        return answer.partial_success.error_message
    partial = json.loads(reply)["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1, partial
    return str(partial["errorMessage"])


def test_each_poison_is_refused_alone_and_a_control_trace_is_stored_after_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "poison.duckdb"
    server = start(db)
    try:
        for n, (what, span, words) in enumerate(POISONS):
            message = _refused(server, _body(span), JSON)
            assert words in message, (what, message)
            send_control(server, n)
        for n, (span, words) in enumerate(_proto_poisons(), len(POISONS)):
            assert words in _refused(server, span, PROTOBUF)
            send_control(server, n)
    finally:
        assert server.stop() == 0, server.err
    assert "Traceback" not in server.err
    reasons = [r[0] for r in _stored(db, "SELECT reason FROM rejects")]
    assert len(reasons) == len(POISONS) + 2, reasons
    runs = _stored(db, "SELECT count(*) FROM runs WHERE run_id LIKE 'control-%'")[0][0]
    assert runs == len(POISONS) + 2
    durations = _stored(db, "SELECT min(duration_ms) FROM runs")[0][0]
    assert durations >= 0


def _proto_poisons() -> list[tuple[bytes, str]]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    out = []
    for n, (attr, end, words) in enumerate(
        [
            (("gen_ai.usage.output_tokens", float("inf")), 1700000001000000000, "finite"),
            (None, 1600000000000000000, "ends before it starts"),
        ]
    ):
        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id = bytes([0xCD, n + 1]) * 8, bytes([0xCD, n + 1]) * 4
        span.name = "invoke_agent poisoned"
        span.start_time_unix_nano, span.end_time_unix_nano = 1700000000000000000, end
        kv = span.attributes.add()
        kv.key, kv.value.string_value = "gen_ai.operation.name", "invoke_agent"
        if attr is not None:
            kv = span.attributes.add()
            kv.key, kv.value.double_value = attr
        out.append((request.SerializeToString(), words))
    return out


def test_a_name_of_megabytes_is_cut_with_a_marker_and_stored(tmp_path: Path) -> None:
    db = tmp_path / "long.duckdb"
    server = start(db)
    name = "n" * (8 << 20)
    span = _span(1, [{"key": "tracekit.run_id", "value": {"stringValue": "long-name"}}])
    span["attributes"][1]["value"]["stringValue"] = name
    try:
        status, reply, _ = server.post("/v1/traces", _body(span), JSON)
        assert status == 200, reply[:300]
        send_control(server, 1)
        assert server.get("/api/runs/long-name/tree")[0] == 200
    finally:
        assert server.stop() == 0, server.err
    (agent,) = _stored(db, "SELECT agent FROM runs WHERE run_id = 'long-name'")[0]
    assert len(agent) <= 1024 and agent.endswith("characters cut]"), agent[-40:]
    assert agent.startswith("nnnn")


def test_tracekit_ingest_refuses_each_poison_alone_and_stores_the_rest(tmp_path: Path) -> None:
    import subprocess

    from _server_helpers import TRACEKIT, control_body

    lines = [_body(span).decode() for _, span in ((w, s) for w, s, _ in POISONS)]
    lines += [control_body(n).decode() for n in range(3)]
    source = tmp_path / "poison.otlp.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "ingested.duckdb"
    done = subprocess.run(
        [TRACEKIT, "ingest", str(source), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    reasons = [r[0] for r in _stored(db, "SELECT reason FROM rejects ORDER BY line")]
    assert len(reasons) == len(POISONS), reasons
    for (what, _, words), reason in zip(POISONS, reasons, strict=True):
        assert words in reason, (what, reason)
    runs = _stored(db, "SELECT count(*) FROM runs WHERE run_id LIKE 'control-%'")[0][0]
    assert runs == 3
