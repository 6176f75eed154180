"""OTLP/gRPC: the stock ``opentelemetry-exporter-otlp-proto-grpc`` exporter into ``tracekit serve``."""

from __future__ import annotations

import socket
from pathlib import Path

from _server_helpers import readable_spans, simulate_otlp, spans_of, start

from tracekit.intake.otlp.convert import otlp_to_events
from tracekit.store import Store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_grpc_exporter_is_stored_like_the_file(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    docs = simulate_otlp(tmp_path / "fleet.jsonl", runs=8)
    spans = spans_of(docs)
    port = _free_port()
    server = start(tmp_path / "g.duckdb", "--grpc-port", str(port), "--token", "tok")
    try:
        refused = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}", insecure=True, timeout=5)
        assert refused.export(readable_spans(spans[:3])) == SpanExportResult.FAILURE  # no token
        refused.shutdown()
        exporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{port}",
            insecure=True,
            headers={"authorization": "Bearer tok"},
        )
        assert exporter.export(readable_spans(spans)) == SpanExportResult.SUCCESS
        exporter.shutdown()
    finally:
        assert server.stop() == 0
    expected = [event for doc in docs for event in otlp_to_events(doc)]
    with Store(tmp_path / "g.duckdb", read_only=True) as store:
        stored = store.sql("SELECT count(*) AS n FROM events")["n"][0]
        roots = set(store.runs()["run_id"])
    assert stored == len(expected)
    assert roots == {e.runId for e in expected if type(e).__name__ == "RunStart"}
