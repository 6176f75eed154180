"""Bodies that are legal but odd: gzip of several members, ids OTLP does not allow, a key twice."""

from __future__ import annotations

import gzip
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _server_helpers import TRACEKIT, Server, start

from tracekit.intake.otlp.decode_json import Span
from tracekit.server.decode import span_of, spans_entry
from tracekit.server.spool import Entry, decode_payload, encode_payload
from tracekit.store import Store

JSON_HEADERS = {"Content-Type": "application/json"}
TRACE = "5dfbd3d12c4a3698aa2ca1af6a107b75"


def _span(span_id: str, agent: str, trace: str = TRACE, parent: str = "") -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"invoke_agent {agent}",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": agent}},
        ],
    }


def _doc(*spans: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(tmp_path_factory.mktemp("decode") / "d.duckdb")
    yield server
    assert server.stop() == 0


def test_every_member_of_a_gzip_body_is_read(served: Server) -> None:
    body = _doc(
        _span("00000000000000a1", "front"),
        _span("00000000000000a2", "billing", parent="00000000000000a1"),
    )
    half = len(body) // 2
    two_members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    assert gzip.decompress(two_members) == body  # legal gzip: both members
    headers = {**JSON_HEADERS, "Content-Encoding": "gzip"}
    status, reply, _ = served.post("/v1/traces", two_members, headers)
    assert status == 200 and json.loads(reply) == {}
    # A second member cut short is a 400, never a 200 with the first member alone.
    cut = gzip.compress(body[:half]) + gzip.compress(body[half:])[:-9]
    status, reply, _ = served.post("/v1/traces", cut, headers)
    assert status == 400 and "cut short" in json.loads(reply)["message"]
    served.wait_loaded(2)
    code, runs = served.get("/api/runs")
    assert code == 200
    rows = json.loads(runs)["rows"]
    assert [r["agent"] for r in rows if r["run_id"].startswith("00000000000000a1")] == ["front"]


def test_odd_ids_are_rejects_with_their_reason(served: Server) -> None:
    trace = "6dfbd3d12c4a3698aa2ca1af6a107b75"
    spans = [
        _span("00000000000000b1", "kept", trace=trace),
        _span("00000000000000b2", "short trace", trace="q83v"),  # base64 of 3 bytes
        _span("ab" * 100, "long span", trace=trace),  # 100 bytes
        _span("00000000000000b4", "no trace", trace=""),
        _span("00000000000000b5", "also no trace", trace=""),
        _span("0000000000000000", "zero span", trace=trace),
        _span("00000000000000b7", "zero trace", trace="0" * 32),
    ]
    status, reply, _ = served.post("/v1/traces", _doc(*spans), JSON_HEADERS)
    assert status == 200
    partial = json.loads(reply)["partialSuccess"]
    assert partial["rejectedSpans"] == "6"
    assert "trace id 'abcdef' is not 16 bytes" in partial["errorMessage"]


def test_a_key_twice_is_a_400(served: Server) -> None:
    one = json.dumps({"scopeSpans": [{"spans": [_span("00000000000000c1", "first")]}]})
    two = json.dumps({"scopeSpans": [{"spans": [_span("00000000000000c2", "second")]}]})
    body = f'{{"resourceSpans": [{one}], "resourceSpans": [{two}]}}'.encode()
    status, reply, _ = served.post("/v1/traces", body, JSON_HEADERS)
    assert status == 400
    assert json.loads(reply)["message"] == "the key 'resourceSpans' appears twice in one object"


def test_rejected_ids_are_listed_by_tracekit_rejects(tmp_path: Path) -> None:
    server = start(tmp_path / "r.duckdb")
    try:
        spans = [_span("00000000000000d1", "ok"), _span("00000000000000d2", "bad", trace="")]
        assert server.post("/v1/traces", _doc(*spans), JSON_HEADERS)[0] == 200
        server.wait_loaded(1)
        listed = subprocess.run(
            [TRACEKIT, "rejects", "--db", str(server.db), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        assert server.stop() == 0
    assert listed.returncode == 0, listed.stderr
    reasons = [json.loads(line)["reason"] for line in listed.stdout.splitlines()]
    assert reasons == ["trace id '' is not 16 bytes"]
    with Store(server.db, read_only=True) as store:
        assert list(store.runs()["agent"]) == ["ok"]


def _full_span() -> Span:
    """A span with every field away from its default."""
    return Span(
        "ab" * 16,
        "cd" * 8,
        "ef" * 8,
        "transfer_to_billing",
        1,
        2,
        {"gen_ai.tool.name": "transfer_to_billing"},
        True,
        "failed",
        "desk",
        "KeyError",
        line=7,
        links=(("12" * 16, "34" * 8), ("56" * 16, "78" * 8)),
        target="billing",
        transfer=True,
        exception_message="no score",
        exception_cause="ValueError: card declined",
    )


def _full_doc() -> dict[str, Any]:
    """A request whose span has every part away from its default, as an exporter sends it."""

    def kv(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    stack = "ValueError: card declined\nThe above exception was the direct cause of the following exception:\nKeyError: x"
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "parentSpanId": "ef" * 8,
        "name": "transfer_to_billing",
        "kind": "SPAN_KIND_CLIENT",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "status": {"code": "STATUS_CODE_ERROR", "message": "failed"},
        "attributes": [kv("gen_ai.tool.name", "transfer_to_billing"), kv("not.read", "kept")],
        "events": [
            {
                "name": "exception",
                "attributes": [
                    kv("exception.type", "KeyError"),
                    kv("exception.message", "no score"),
                    kv("exception.stacktrace", stack),
                ],
            },
            {"name": "args", "attributes": [kv("arguments", '{"agent": "billing"}')]},
        ],
        "links": [
            {"traceId": "12" * 16, "spanId": "34" * 8},
            {"traceId": "56" * 16, "spanId": "78" * 8},
        ],
        "traceState": "vendor=1",
    }
    resource = {"attributes": [kv("service.name", "desk"), kv("host.name", "h1")]}
    scope = {"name": "my.lib", "version": "1.0"}
    return {
        "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]}]
    }


def test_every_span_field_survives_the_spool() -> None:
    """All of a span is spooled, and what the store derives from it is what was sent."""
    import msgspec

    from tracekit.intake.otlp.decode_json import decode_spans
    from tracekit.intake.otlp.received import SPAN_NAMES, span_document

    doc = _full_doc()
    spans = decode_spans(doc)
    entry = decode_payload(encode_payload(spans_entry((doc, spans), "serve:otlp")))
    row = dict(zip(SPAN_NAMES, entry.spans[0], strict=True))
    assert "host.name" in row["resource"] and "my.lib" in row["scope"]
    assert "traceState" in row["extra"] and "not.read" in row["attributes"]
    assert (row["kind"], row["status_code"]) == (3, 2)
    again = msgspec.json.decode(span_document(row))
    back = decode_spans({"resourceSpans": [again]})[0]
    assert back == spans[0]
    assert back.target == "billing" and back.exception_cause == "ValueError: card declined"


def test_an_entry_spooled_by_an_older_server_reads_back_with_the_defaults() -> None:
    span = _full_span()
    row = tuple(getattr(span, name) for name in Span.__struct_fields__[:11])
    entry = decode_payload(encode_payload(Entry(source="serve:otlp", spans=[row])))
    back = span_of(entry.spans[0])
    assert back.name == span.name and back.exception == "KeyError"
    assert (back.line, back.links, back.target, back.transfer) == (0, (), None, False)
    assert (back.exception_message, back.exception_cause) == (None, None)


def test_a_protobuf_request_reads_as_protobufs_own_json_mapping_does() -> None:
    """The walk of a message gives the spans, and the rows, protobuf's MessageToDict gives."""
    import base64

    from google.protobuf.json_format import MessageToDict, ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tracekit.intake.otlp.decode_json import decode_spans
    from tracekit.intake.otlp.received import SpanRows, message_document

    def ids_as_base64(obj: Any) -> Any:  # protobuf's JSON mapping writes bytes as base64
        if isinstance(obj, list):
            return [ids_as_base64(x) for x in obj]
        if not isinstance(obj, dict):
            return obj
        ids = ("traceId", "spanId", "parentSpanId")
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in ids else ids_as_base64(v)
            for k, v in obj.items()
        }

    message = ParseDict(ids_as_base64(_full_doc()), ExportTraceServiceRequest())
    walked, mapped = message_document(message), MessageToDict(message)
    spans = decode_spans(walked)
    assert spans == decode_spans(mapped) and spans[0].target == "billing"
    rows = [SpanRows(), SpanRows()]
    rows[0].add(walked, spans, 0)
    rows[1].add(mapped, decode_spans(mapped), 0)
    mine, theirs = rows[0].rows()[0], rows[1].rows()[0]
    assert mine[:12] == theirs[:12]  # ids, name, kind, times, status, service
    assert json.loads(mine[12]) == json.loads(theirs[12])  # the attributes as received
