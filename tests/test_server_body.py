"""Bodies that come slowly, too long, or never: nobody else waits for them.

A real server on loopback; the slow clients are raw sockets that send their
headers and then drip (or stop sending) the body.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from _server_helpers import Server, start

JSON_HEADERS = {"Content-Type": "application/json"}
GOOD = json.dumps(
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5dfbd3d12c4a3698aa2ca1af6a107b75",
                                "spanId": "00000000000000a1",
                                "name": "invoke_agent front",
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                            }
                        ]
                    }
                ]
            }
        ]
    }
).encode()


def _open(server: Server, length: int, first: bytes = b"") -> socket.socket:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    sock.sendall(head.encode() + first)
    return sock


def _status(sock: socket.socket) -> int:
    answer = sock.recv(4096)
    return int(answer.split(b" ", 2)[1]) if answer else 0


def _timed_post(server: Server) -> tuple[int, float]:
    began = time.monotonic()
    status, _, _ = server.post("/v1/traces", GOOD, JSON_HEADERS)
    return status, time.monotonic() - began


def test_slow_bodies_hold_no_slot_and_are_cut_off(tmp_path: Path) -> None:
    server = start(tmp_path / "s.duckdb")
    slow: list[socket.socket] = []
    try:
        # 80 clients (more than the 64 slots) send headers and 10 bytes of 1,000.
        slow = [_open(server, 1000, b'{"resourceS') for _ in range(80)]
        time.sleep(0.5)
        for _ in range(5):
            status, took = _timed_post(server)
            assert status == 200 and took < 1.0, (status, took)
        # Each drips no more: cut off with 408 once no byte came for 5 s.
        time.sleep(5.5)
        assert {_status(s) for s in slow[:5]} == {408}
        status, took = _timed_post(server)
        assert status == 200 and took < 1.0
    finally:
        for sock in slow:
            sock.close()
        assert server.stop() == 0
    assert server.err.count("Traceback") == 0, server.err


def test_a_length_far_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    server = start(tmp_path / "l.duckdb")
    try:
        sock = _open(server, 10 << 30, b"0123456789")  # 10 GB declared, 10 bytes sent
        began = time.monotonic()
        answer = b""
        while not answer.endswith(b"}"):
            piece = sock.recv(4096)
            assert piece, answer
            answer += piece
        assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
        assert b"Content-Length" in answer and time.monotonic() - began < 1.0
        sock.close()
        # A client that goes away mid-body is one line in the log, not a traceback.
        gone = _open(server, 1000, b'{"resourceSpans": [')
        gone.close()
        assert _timed_post(server)[0] == 200
        time.sleep(5.5)  # one status line comes while data arrives
    finally:
        assert server.stop() == 0
    assert "Traceback" not in server.err, server.err
    assert server.err.count("went away before its body was in") == 1, server.err
    assert "tracekit serve: received 1, loaded" in server.err, server.err
