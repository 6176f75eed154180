"""The protobuf path maps the same spans to the same v1 records as the JSON path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _server_helpers import readable_spans, simulate_otlp, spans_of

from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.decode_proto import decode_spans_proto


@pytest.mark.parametrize("seed", [1, 2])
def test_protobuf_and_json_give_the_same_records(tmp_path: Path, seed: int) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    docs = simulate_otlp(tmp_path / "f.jsonl", runs=25, seed=seed)
    from_json = OtlpConverter()
    for doc in docs:
        from_json.feed_json(json.dumps(doc).encode())
    from_proto = OtlpConverter()
    body = encode_spans(readable_spans(spans_of(docs))).SerializeToString()
    from_proto.feed_spans(decode_spans_proto(body))
    assert from_proto.finish() == from_json.finish()


def test_a_truncated_message_is_refused_with_a_reason() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name, span.start_time_unix_nano = (
        bytes(16),
        b"\1" * 8,
        "s" * 99,
        5,
    )
    with pytest.raises(ValueError, match="not an OTLP protobuf message"):
        decode_spans_proto(request.SerializeToString()[:-30])


def test_values_of_every_kind_are_read_as_json_reads_them() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.start_time_unix_nano = bytes(16), b"\1" * 8, 5
    span.status.code, span.status.message = 2, "boom"
    for key, setter in [
        ("tracekit.root", lambda v: setattr(v, "bool_value", True)),
        ("gen_ai.agent.name", lambda v: setattr(v, "string_value", "a")),
        ("tracekit.run_id", lambda v: setattr(v, "bytes_value", b"\xff\x00")),
        ("tracekit.step", lambda v: v.array_value.values.add().__setattr__("int_value", 7)),
    ]:
        kv = span.attributes.add()
        kv.key = key
        setter(kv.value)
    event = span.events.add()
    event.name = "exception"
    kv = event.attributes.add()
    kv.key, kv.value.string_value = "exception.type", "ValueError"
    (got,) = decode_spans_proto(request.SerializeToString())
    assert got.attrs == {
        "tracekit.root": True,
        "gen_ai.agent.name": "a",
        "tracekit.run_id": "/wA=",
        "tracekit.step": [7],
    }
    assert (got.error, got.message, got.exception, got.end, got.parent) == (
        True,
        "boom",
        "ValueError",
        None,
        "",
    )


RECORDINGS = Path(__file__).parent / "frameworks" / "recordings"


@pytest.mark.parametrize("framework", ["llama_index", "autogen", "crewai", "agno", "google_adk"])
def test_every_decoder_reads_the_same_handoff_targets_and_turns(framework: str) -> None:
    """JSON, fast JSON and protobuf read the same targets, transfers and current agents."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tracekit.intake.otlp.decode_json import decode_spans
    from tracekit.intake.otlp.decode_json_fast import decode_spans_fast
    from tracekit.intake.otlp.inputs import CURRENT_AGENT

    def facts(spans: list[Any]) -> list[tuple[Any, ...]]:
        return sorted(
            (s.id, s.parent, s.name, s.attrs.get(CURRENT_AGENT), s.target, s.transfer)
            for s in spans
        )

    lines = [
        line for path in sorted((RECORDINGS / framework).glob("*.otlp.json"))
        for line in path.read_text().splitlines()
    ]  # fmt: skip
    docs = [json.loads(line) for line in lines]
    from_json = facts([s for doc in docs for s in decode_spans(doc)])
    from_fast = facts([s for line in lines for s in decode_spans_fast(line.encode())])
    body = encode_spans(readable_spans(spans_of(docs))).SerializeToString()
    assert from_fast == from_json
    assert facts(decode_spans_proto(body)) == from_json
    if framework == "llama_index":  # the turns and the handoff tool are read at all
        assert {f[3] for f in from_json} >= {"triage", "billing"}
        assert "billing" in {f[4] for f in from_json}
