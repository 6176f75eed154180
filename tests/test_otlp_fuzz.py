"""A fuzz of OTLP bodies (JSON and protobuf) against the decoder and the mapping.

Whatever the values (times past any range, NaN and infinities, integers past
64 bits, strings of any length, ids good and bad), a body is either refused
whole (400, 413) or decoded with every span kept or refused one by one; the
spool entry encodes; the mapping never raises, and accounts for every span
kept (mapped, refused, or held for its trace; a second copy of a span is the
same span). Bounded here; longer in
``bench/bench_otlp_fuzz.py``.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit.intake.otlp.derivation import derive_traces
from tracekit.intake.otlp.received import SPAN_NAMES
from tracekit.server.decode import BadRequestError, TooLargeError
from tracekit.server.decode_pool import decode_spans_body
from tracekit.server.spool import decode_payload

EXAMPLES = int(os.environ.get("TRACEKIT_FUZZ_EXAMPLES", "120"))

_IDS = ["0102030405060708", "1112131415161718", "2122232425262728", "0000000000000000", "zz", ""]
_TRACES = ["0af7651916cd43dd8448eb211c80319c", "ab" * 16, "00" * 16, "short"]
_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.tool.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "llm.token_count.prompt",
    "tracekit.run_id",
    "tracekit.status",
    "metadata",
    "session.id",
    "error.type",
]
_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 0, 1]),
)
_TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["invoke_agent", "execute_tool", "Infinity", "NaN", "-5", "1e999"]),
    st.integers(1000, 40_000).map(lambda n: "x" * n),
)
_TIMES = st.one_of(
    st.integers(-(2**64), 2**70),
    st.integers(1_700_000_000_000_000_000, 1_700_000_100_000_000_000),
    st.sampled_from(["Infinity", "NaN", "soon", "", "0", "18446744073709551615"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(0, 2**64).map(str),
)


def _value(depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    leaves = st.one_of(
        _NUMBERS.map(lambda v: {"intValue": v if not isinstance(v, float) else str(v)}),
        _NUMBERS.map(lambda v: {"doubleValue": v}),
        _TEXT.map(lambda v: {"doubleValue": v}),
        _TEXT.map(lambda v: {"intValue": v}),
        _TEXT.map(lambda v: {"stringValue": v}),
        st.booleans().map(lambda v: {"boolValue": v}),
    )
    if depth >= 2:
        return leaves
    nested = st.lists(_value(depth + 1), max_size=3).map(lambda vs: {"arrayValue": {"values": vs}})
    return st.one_of(leaves, nested)


_SPAN = st.fixed_dictionaries(
    {
        "traceId": st.sampled_from(_TRACES),
        "spanId": st.sampled_from(_IDS[:3]),
        "parentSpanId": st.sampled_from(_IDS),
        "name": st.one_of(st.sampled_from(["invoke_agent a", "execute_tool t", "chat"]), _TEXT),
        "startTimeUnixNano": _TIMES,
        "endTimeUnixNano": _TIMES,
        "attributes": st.lists(
            st.fixed_dictionaries({"key": st.sampled_from(_KEYS), "value": _value()}), max_size=5
        ),
        "status": st.fixed_dictionaries(
            {"code": st.sampled_from([0, 1, 2, "STATUS_CODE_ERROR"]), "message": _TEXT}
        ),
    }
)


def _json_body(spans: list[dict[str, Any]]) -> bytes:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    return json.dumps(doc).encode()


def _proto_body(spans: list[dict[str, Any]]) -> bytes:
    """The same spans as protobuf, each value as near as its field type holds."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for raw in spans:
        span = scope.spans.add()
        span.trace_id = bytes.fromhex(raw["traceId"]) if len(raw["traceId"]) == 32 else b"\1"
        span.span_id = bytes.fromhex(raw["spanId"])
        parent = raw["parentSpanId"]
        span.parent_span_id = bytes.fromhex(parent) if len(parent) == 16 else b""
        span.name = raw["name"]
        span.start_time_unix_nano = _u64(raw["startTimeUnixNano"]) or 1
        span.end_time_unix_nano = _u64(raw["endTimeUnixNano"])
        span.status.code, span.status.message = 2 if raw["status"]["code"] == 2 else 0, "m"
        for attr in raw["attributes"]:
            kv = span.attributes.add()
            kv.key = attr["key"]
            kind, value = next(iter(attr["value"].items()))
            if kind == "intValue":
                kv.value.int_value = _i64(value)
            elif kind == "doubleValue":
                kv.value.double_value = _float(value)
            elif kind == "boolValue":
                kv.value.bool_value = value
            else:
                kv.value.string_value = str(value)[:50_000]
    return request.SerializeToString()


def _u64(value: Any) -> int:
    try:
        return int(value) % 2**64
    except (ValueError, OverflowError):
        return 0


def _i64(value: Any) -> int:
    try:
        return max(min(int(value), 2**63 - 1), -(2**63))
    except (ValueError, OverflowError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _accounted(kind: str, body: bytes, spans: int) -> None:
    try:
        decoded = decode_spans_body(kind, body, "", 32 << 20)
    except (BadRequestError, TooLargeError):
        return  # refused whole: 400 or 413, nothing acknowledged
    assert decoded.kept + decoded.refused == spans
    entries = [decode_payload(payload) for payload, _ in decoded.payloads]
    assert sum(len(e.spans) for e in entries) == decoded.kept
    assert sum(len(e.rejects) for e in entries) == decoded.refused
    # The store keeps a span once per (trace, span) id: sent twice, one span.
    rows = {(row[2], row[3]): row for e in entries for row in reversed(e.spans)}
    stored = [dict(zip(SPAN_NAMES, row, strict=True), ingest_id=1) for row in rows.values()]
    stored.sort(key=lambda r: (r["line"], r["pos"]))
    derived = derive_traces(stored)
    assert derived.counts.read == len(rows), derived.counts
    assert len(derived.refused) == derived.counts.refused


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(_SPAN, min_size=1, max_size=6))
def test_any_otlp_json_body_is_refused_whole_or_every_span_accounted_for(
    spans: list[dict[str, Any]],
) -> None:
    _accounted("json", _json_body(spans), len(spans))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(_SPAN, min_size=1, max_size=6))
def test_any_otlp_protobuf_body_is_refused_whole_or_every_span_accounted_for(
    spans: list[dict[str, Any]],
) -> None:
    _accounted("protobuf", _proto_body(spans), len(spans))
