"""``HttpSink``: the SDK's records into a live ``tracekit serve``; a dead server never hurts the agent."""

from __future__ import annotations

import http.server
import logging
import socket
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from _server_helpers import start

from tracekit import AgentTracer
from tracekit.sdk.http_sink import HttpSink
from tracekit.store import Store


def test_records_reach_the_store_through_the_server(tmp_path: Path) -> None:
    server = start(tmp_path / "sdk.duckdb")
    try:
        sink = HttpSink(server.url, batch=7, interval=0.1)
        with AgentTracer(sink, service="front-desk") as tk:
            for _ in range(5):
                with tk.run("front_desk"):
                    with tk.delegate("billing", node="hand_over"):
                        pass
        sink.close()
        assert sink.dropped == 0 and sink.sent > 0
        status = server.wait_loaded(0)
        while status["sources"].get("serve:records", {}).get("read", 0) < sink.sent:
            status = server.wait_loaded(0)
        assert status["sources"]["serve:records"]["accepted"] == sink.sent
    finally:
        assert server.stop() == 0
    with Store(tmp_path / "sdk.duckdb", read_only=True) as store:
        runs = store.runs()
    assert len(runs) == 5 and set(runs["outcome"]) == {"ok"}


def test_a_server_that_is_not_there_is_logged_once_and_the_agent_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = HttpSink(f"http://127.0.0.1:{port}", batch=2, max_buffer=4, interval=0.05, timeout=0.5)
    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"), AgentTracer(sink) as tk:
        for _ in range(10):
            with tk.run("agent"):
                pass
    sink.close()
    warnings = [r.getMessage() for r in caplog.records if "HttpSink" in r.getMessage()]
    assert len(warnings) == 2  # the failure, once; at close, what it cost
    assert "carrying on (logged once)" in warnings[0]
    assert warnings[1].startswith("tracekit HttpSink: 20 records not delivered to http://")
    assert (
        sink.sent == 0 and sink.dropped == 20
    )  # every record accounted for: dropped, never raised


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each POST with the next status of ``statuses`` (then 200), keeping the bodies."""

    statuses: ClassVar[list[int]] = []
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        status = self.statuses.pop(0) if self.statuses else 200
        if status == 200:
            self.bodies.append(body)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("statuses", "sent", "dropped"),
    [([503, 429], 6, 0), ([400], 4, 2)],
    ids=["busy-then-ok-is-retried", "refused-is-dropped"],
)
def test_a_busy_server_gets_the_batch_again_a_refusing_one_does_not(
    statuses: list[int], sent: int, dropped: int
) -> None:
    handler = type("Handler", (_Scripted,), {"statuses": list(statuses), "bodies": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sink = HttpSink(f"http://127.0.0.1:{server.server_address[1]}", batch=2, interval=60)
        with AgentTracer(sink) as tk:
            for _ in range(3):
                with tk.run("agent"):
                    pass
            for _ in range(len(statuses)):
                tk.flush()  # one try each: the scripted answers, in order
    finally:
        server.shutdown()
        server.server_close()
    assert (sink.sent, sink.dropped) == (sent, dropped)
    lines = [line for body in handler.bodies for line in body.splitlines()]
    assert len(lines) == sent and len(set(lines)) == sent  # none twice
