"""``tracekit serve`` over HTTP: stock exporters in, the same trees out; hostile bodies answered.

A real server (the installed command) on a free loopback port, real
exporters (``opentelemetry-exporter-otlp-proto-http``) in other processes.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing as mp
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _server_helpers import (
    TRACEKIT,
    by_trace,
    otlp_json,
    post,
    readable_spans,
    simulate_otlp,
    spans_of,
    start,
)

from tracekit.store import Store
from tracekit.tree.text import describe_agent_tree

JSON_HEADERS = {"Content-Type": "application/json"}


def _export_proto(url: str, group_file: str) -> int:
    """In another process: the stock exporter, configured only by the standard variable."""
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    spans = readable_spans([tuple(x) for x in json.loads(Path(group_file).read_text())])
    exporter = OTLPSpanExporter()
    sent = 0
    for i in range(0, len(spans), 100):
        assert exporter.export(spans[i : i + 100]) == SpanExportResult.SUCCESS
        sent += len(spans[i : i + 100])
    exporter.shutdown()
    return sent


def _export_json(url: str, group_file: str) -> int:
    spans = [tuple(x) for x in json.loads(Path(group_file).read_text())]
    for i in range(0, len(spans), 100):
        status, body, _ = post(url + "/v1/traces", otlp_json(spans[i : i + 100]), JSON_HEADERS)  # type: ignore[arg-type]
        assert status == 200, body
    return len(spans)


def _blocks(text: str) -> dict[str, str]:
    """``tracekit tree FILE`` output cut into its runs, by run id (the trees, not the why).

    The why of the runs that did not end well comes last, one ``run ID: outcome``
    line each; every run it names is one of the trees.
    """
    out = {}
    *trees, why = text.strip().split("\n\n")
    if not re.match(r"run \S+: outcome ", why):
        trees, why = [*trees, why], ""
    for block in trees:
        match = re.match(r"run (\S+):", block)
        assert match, block
        out[match.group(1)] = block
    assert set(re.findall(r"^run (\S+): outcome ", why, flags=re.M)) <= set(out), why
    return out


def test_stock_exporters_from_several_processes_give_the_trees_of_the_file(tmp_path: Path) -> None:
    trace_file = tmp_path / "fleet.otlp.jsonl"
    spans = spans_of(simulate_otlp(trace_file, runs=20))
    groups = by_trace(spans, 4)
    files = []
    for i, group in enumerate(groups):
        files.append(tmp_path / f"group{i}.json")
        files[-1].write_text(json.dumps(group))
    server = start(tmp_path / "live.duckdb")
    try:
        ctx = mp.get_context("spawn")
        with ctx.Pool(4) as pool:
            jobs = [
                pool.apply_async(_export_proto if i < 2 else _export_json, (server.url, str(f)))
                for i, f in enumerate(files)
            ]
            sent = sum(job.get(timeout=120) for job in jobs)
        assert sent == len(spans)
        status = json.loads(server.get("/api/ingest")[1])
        assert status["sources"]["serve:otlp"]["received"] == len(spans)
    finally:
        assert server.stop() == 0  # SIGTERM: everything spooled is loaded first
    assert not (tmp_path / "live.duckdb.server.json").exists()
    expected = _blocks(
        subprocess.run(
            [TRACEKIT, "tree", str(trace_file), "--color", "never"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "COLUMNS": "200"},
        ).stdout
    )
    with Store(tmp_path / "live.duckdb", read_only=True) as store:
        roots = set(store.runs()["run_id"])
        assert roots == set(expected)
        for run_id, block in expected.items():
            body = describe_agent_tree(store.tree(run_id), indent=1)
            assert block.split("\n", 1)[1] == body, run_id
        log = store.ingest_log()
    assert set(log["source"]) == {"serve:otlp", "serve:derive"}  # spans stored, traces derived
    assert (log["lines_read"] == log["accepted"] + log["rejected"] + log["duplicates"]).all()
    assert log["duplicates"].sum() == 0


def _span(name: str, span_id: str, agent: str | None = None, **extra: Any) -> dict[str, Any]:
    attrs = []
    if agent is not None:
        attrs = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": agent}},
        ]
    return {
        "traceId": "5dfbd3d12c4a3698aa2ca1af6a107b75",
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": attrs,
        **extra,
    }


def _doc(*spans: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def test_hostile_bodies_get_their_status_and_the_server_stays_up(tmp_path: Path) -> None:
    server = start(tmp_path / "h.duckdb", "--max-body", str(4 << 20))
    try:
        url = server.url + "/v1/traces"
        good = _doc(_span("invoke_agent ok", "00000000000000a1", "ok"))
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id, span.name = bytes(16), b"\x01" * 8, "x" * 300
        span.start_time_unix_nano = 1
        whole = request.SerializeToString()
        cases: list[tuple[str, bytes, dict[str, str], int]] = [
            ("truncated protobuf", whole[:-40], {"Content-Type": "application/x-protobuf"}, 400),
            ("wrong content type", good, {"Content-Type": "text/html"}, 415),
            ("not JSON", b"{nope", JSON_HEADERS, 400),
            ("not OTLP", b'{"hello": 1}', JSON_HEADERS, 400),
            ("10,000-deep JSON", b"[" * 10_000 + b"]" * 10_000, JSON_HEADERS, 400),
            ("deep attribute", _deep_attribute(), JSON_HEADERS, 400),
            ("over the limit", b" " * (5 << 20), JSON_HEADERS, 413),
            (
                "gzip bomb",
                gzip.compress(b"\0" * (64 << 20), 9),
                {**JSON_HEADERS, "Content-Encoding": "gzip"},
                413,
            ),
            ("not gzip", b"plain", {**JSON_HEADERS, "Content-Encoding": "gzip"}, 400),
        ]
        for name, body, headers, expected in cases:
            status, reply, _ = post(url, body, headers)
            assert status == expected, (name, reply)
            if headers["Content-Type"] == "application/json":  # a Status, as the request's encoding
                assert json.loads(reply)["message"], name
            assert post(url, good, JSON_HEADERS)[0] == 200, f"after {name}"
        # A protobuf failure is a protobuf google.rpc.Status: code 3, then the message.
        status, reply, _ = post(url, whole[:-40], {"Content-Type": "application/x-protobuf"})
        assert status == 400 and reply[:2] == b"\x08\x03"
        # Huge attribute values and names with markup and terminal escapes are data.
        evil = "<script>alert(1)</script>\x1b]0;pwned\x07\x1b[31m"
        huge = _span("invoke_agent big", "00000000000000b1", "big")
        huge["traceId"] = "6dfbd3d12c4a3698aa2ca1af6a107b75"
        huge["attributes"].append(
            {"key": "gen_ai.input.messages", "value": {"stringValue": "m" * (3 << 20)}}
        )
        named = _span("invoke_agent evil", "00000000000000c1", evil)
        named["traceId"] = "7dfbd3d12c4a3698aa2ca1af6a107b75"
        for doc in (_doc(huge), _doc(named)):
            assert post(url, doc, JSON_HEADERS)[0] == 200
        bad_time = _span("invoke_agent late", "00000000000000d1", "late")
        bad_time["traceId"] = "8dfbd3d12c4a3698aa2ca1af6a107b75"
        bad_time["startTimeUnixNano"] = str(10**21)
        status, reply, _ = post(url, _doc(bad_time, _span("ok", "00000000000000d2")), JSON_HEADERS)
        assert status == 200
        partial = json.loads(reply)["partialSuccess"]
        assert partial["rejectedSpans"] == "1" and "out of range" in partial["errorMessage"]
        status, health = server.get("/healthz")
        assert status == 200 and json.loads(health)["ok"] is True
        status_doc = server.wait_loaded(4)
        assert status_doc["loader_failed"] is None
    finally:
        assert server.stop() == 0
    runs = subprocess.run(
        [TRACEKIT, "runs", "--db", str(tmp_path / "h.duckdb")],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400"},  # the table fits the terminal: a wide one
    )
    assert runs.returncode == 0, runs.stderr
    assert "\x1b" not in runs.stdout and "\x07" not in runs.stdout  # shown escaped
    assert "<script>alert(1)</script>" in runs.stdout
    with Store(tmp_path / "h.duckdb", read_only=True) as store:
        rejects = store.rejects()
        assert len(rejects) == 1 and "out of range" in rejects["reason"][0]
        assert set(store.runs()["agent"]) == {"ok", "big", evil}


def _deep_attribute() -> bytes:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(300):
        value = {"arrayValue": {"values": [value]}}
    span = _span("invoke_agent deep", "00000000000000e1", "deep")
    span["attributes"].append({"key": "gen_ai.agent.name", "value": value})
    return _doc(span)


def test_a_token_is_required_when_given_and_healthz_stays_open(tmp_path: Path) -> None:
    server = start(tmp_path / "t.duckdb", "--token", "s3cret")
    try:
        body = _doc(_span("invoke_agent a", "00000000000000f1", "a"))
        assert post(server.url + "/v1/traces", body, JSON_HEADERS)[0] == 401
        wrong = {**JSON_HEADERS, "Authorization": "Bearer nope"}
        assert post(server.url + "/v1/traces", body, wrong)[0] == 401
        assert server.get("/api/ingest")[0] == 401
        assert server.get("/healthz")[0] == 200
        right = {**JSON_HEADERS, "Authorization": "Bearer s3cret"}
        assert post(server.url + "/v1/traces", body, right)[0] == 200
        info = json.loads((tmp_path / "t.duckdb.server.json").read_text())
        assert info["token_required"] is True
        assert (tmp_path / "t.duckdb.server.json").stat().st_mode & 0o777 == 0o600
    finally:
        assert server.stop() == 0


def test_listening_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    result = subprocess.run(
        [TRACEKIT, "serve", "--db", str(tmp_path / "x.duckdb"), "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Error: refusing to listen on 0.0.0.0 without --token" in result.stderr
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("media", ["text/plain", ""])
def test_records_endpoint_wants_ndjson(tmp_path: Path, media: str) -> None:
    server = start(tmp_path / "r.duckdb")
    try:
        line = b'{"type":"run.start","ts":1,"runId":"r1","agent":"a"}\n'
        assert server.post("/v1/records", line, {"Content-Type": media})[0] == 415
        assert (
            server.post(
                "/v1/records", line + b"not json\n", {"Content-Type": "application/x-ndjson"}
            )[0]
            == 200
        )
        status = server.wait_loaded(0)
        while status["sources"].get("serve:records", {}).get("read", 0) < 2:
            status = json.loads(server.get("/api/ingest")[1])
        assert status["sources"]["serve:records"]["accepted"] == 1
        assert status["sources"]["serve:records"]["rejected"] == 1
    finally:
        assert server.stop() == 0
