"""The decoding process: its answers are the in-thread decoding's; killed, nothing acknowledged is lost."""

from __future__ import annotations

import gzip
import json
import os
import signal
import time
from pathlib import Path

import duckdb
from _server_helpers import Server, start
from test_server_recovery import JSON, _batch

from tracekit.server.decode import BadRequestError, TooLargeError
from tracekit.server.decode_pool import decode_spans_body
from tracekit.server.spool import decode_payload


def _stored_runs(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM runs").fetchone()[0])
    finally:
        con.close()


def test_a_killed_decoding_process_is_replaced_and_every_acknowledged_span_stored(
    tmp_path: Path,
) -> None:
    db = tmp_path / "decode.duckdb"
    server = start(db)
    acked = 0
    try:
        assert server.post("/v1/traces", _batch(0), JSON)[0] == 200
        acked += 200
        first = _child(server, "tracekit-decode")
        os.kill(first, signal.SIGKILL)
        assert _gone(first)
        statuses = []
        deadline = time.monotonic() + 30
        for i in range(1, 30):  # 503 while it is replaced (never acknowledged), then 200
            status = server.post("/v1/traces", _batch(i), JSON)[0]
            statuses.append(status)
            acked += 200 if status == 200 else 0
            if status == 200 and len(statuses) > 2:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert set(statuses) <= {200, 503} and statuses[-1] == 200
        assert _child(server, "tracekit-decode") != first
    finally:
        assert server.stop() == 0
    assert _stored_runs(db) == acked


def test_the_decoding_process_ends_when_the_server_is_killed(tmp_path: Path) -> None:
    server = start(tmp_path / "orphan.duckdb")
    worker = _child(server, "tracekit-decode")
    server.proc.kill()
    server.proc.communicate(timeout=30)  # its stderr closes: no child holds it open
    assert _gone(worker)


def test_a_body_decodes_to_the_entry_the_spool_keeps_with_refusals_counted() -> None:
    spans = json.loads(_batch(0, 3))
    spans["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "00" * 8
    body = gzip.compress(json.dumps(spans).encode())
    decoded = decode_spans_body("json", body, "gzip", 1 << 20)
    ((payload, spans),) = decoded.payloads
    entry = decode_payload(payload)
    assert spans == 2
    assert (decoded.kept, decoded.refused) == (2, 1) == (len(entry.spans), len(entry.rejects))
    assert decoded.first_reason == "span id '0000000000000000' is all zero"
    assert decoded.source == entry.source == "serve:otlp"


def test_a_big_body_is_spooled_a_slice_at_a_time_and_refused_whole_if_malformed() -> None:
    body = _proto(25_000)
    decoded = decode_spans_body("protobuf", body, "", 32 << 20)
    assert [n for _, n in decoded.payloads] == [10_000, 10_000, 5_000] and decoded.kept == 25_000
    assert [len(decode_payload(p).spans) for p, _ in decoded.payloads] == [10_000, 10_000, 5_000]
    try:  # the last span has no start: nothing of the body is spooled
        decode_spans_body("protobuf", _proto(25_000, last_start=0), "", 32 << 20)
    except BadRequestError as exc:
        assert "has no startTimeUnixNano" in str(exc)
    else:
        raise AssertionError("a body with a span without start was taken")


def _proto(count: int, last_start: int = 5) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for n in range(count):
        span = scope.spans.add()
        span.trace_id, span.span_id = (n + 1).to_bytes(16, "big"), (n + 1).to_bytes(8, "big")
        span.start_time_unix_nano = 5 if n < count - 1 else last_start
        span.name = "s"
    return request.SerializeToString()


def test_a_body_that_cannot_be_read_is_refused_as_in_a_thread() -> None:
    for kind, body, encoding, error in [
        ("protobuf", b"\xff\xff\xff", "", BadRequestError),
        ("json", b"{", "", BadRequestError),
        ("json", gzip.compress(b" " * 5000), "gzip", TooLargeError),
    ]:
        try:
            decode_spans_body(kind, body, encoding, 4096)
        except error:
            continue
        raise AssertionError(f"{kind} {body[:10]!r} was not refused")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _child(server: Server, name: str, timeout: float = 30) -> int:
    """The server's child process of that name (it names itself once started)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            c for c in _children(server.pid) if Path(f"/proc/{c}/comm").read_text().strip() == name
        ]
        if len(found) == 1 or time.monotonic() > deadline:
            (child,) = found
            return child
        time.sleep(0.05)


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # exited, its parent not yet told
            return True
        time.sleep(0.05)
    return False
