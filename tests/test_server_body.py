"""Bodies that come slowly, too long, or never: nobody else waits for them.

A real server on loopback; the slow clients are raw sockets that send their
headers and then drip (or stop sending) the body.
"""

from __future__ import annotations

import json
import select
import signal
import socket
import threading
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
    sock = socket.create_connection((host, int(port)), timeout=60)  # bounds a hang
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    sock.sendall(head.encode() + first)
    return sock


def _status(sock: socket.socket) -> int:
    answer = sock.recv(4096)
    return int(answer.split(b" ", 2)[1]) if answer else 0


def _answered(socks: list[socket.socket]) -> list[socket.socket]:
    """Those of ``socks`` the server has answered (or closed), without waiting."""
    return select.select(socks, [], [], 0)[0]


def _stopped(server: Server, lines: list[str], reader: threading.Thread) -> int:
    """Stop a server whose stderr ``reader`` collects; its exit status (its stderr in ``err``)."""
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(60)
    reader.join(60)
    assert server.proc.stderr is not None
    server.proc.stderr.close()
    server.err = "".join(lines)
    return code


def _read_err(server: Server) -> tuple[list[str], threading.Thread, threading.Condition]:
    """Collect the server's stderr as it comes: a condition notified at each line."""
    lines: list[str] = []
    came = threading.Condition()

    def read() -> None:
        assert server.proc.stderr is not None
        for line in server.proc.stderr:
            with came:
                lines.append(line)
                came.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader, came


def test_slow_bodies_hold_no_slot_and_are_cut_off(tmp_path: Path) -> None:
    server = start(tmp_path / "s.duckdb")
    slow: list[socket.socket] = []
    try:
        # 80 clients (more than the 64 slots) send headers and 10 bytes of 1,000.
        slow = [_open(server, 1000, b'{"resourceS') for _ in range(80)]
        # A round trip on a later connection: the server has taken the 80 before it.
        assert server.get("/healthz")[0] == 200
        for _ in range(5):
            status, _, _ = server.post("/v1/traces", GOOD, JSON_HEADERS)
            assert status == 200
        # Answered without waiting for the slow clients: none of them is cut off yet
        # (waiting for them, or for their slots, would end only with their 408 at 5 s).
        assert _answered(slow) == []
        # Each drips no more: cut off with 408 once no byte came for 5 s (the 10 s
        # socket timeout bounds a hang; the whole wait is the server's 5 s).
        assert {_status(s) for s in slow[:5]} == {408}
        assert server.post("/v1/traces", GOOD, JSON_HEADERS)[0] == 200
    finally:
        for sock in slow:
            sock.close()
        assert server.stop() == 0
    assert server.err.count("Traceback") == 0, server.err


def test_a_length_far_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    server = start(tmp_path / "l.duckdb")
    lines, reader, came = _read_err(server)
    try:
        sock = _open(server, 10 << 30, b"0123456789")  # 10 GB declared, 10 bytes sent
        answer = b""
        while not answer.endswith(b"}"):
            piece = sock.recv(4096)
            assert piece, answer
            answer += piece
        # 413 while the body is still owed: a server reading it would have waited
        # for the next byte and cut the client off with 408 after 5 s.
        assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
        assert b"Content-Length" in answer
        sock.close()
        # A client that goes away mid-body is one line in the log, not a traceback.
        gone = _open(server, 1000, b'{"resourceSpans": [')
        gone.close()
        assert server.post("/v1/traces", GOOD, JSON_HEADERS)[0] == 200
        # one status line comes (every 5 s) while data arrives
        with came:
            shown = came.wait_for(
                lambda: any("tracekit serve: received 1, loaded" in line for line in lines), 60
            )
        assert shown, lines
    finally:
        assert _stopped(server, lines, reader) == 0
    assert "Traceback" not in server.err, server.err
    assert server.err.count("went away before its body was in") == 1, server.err
    assert "tracekit serve: received 1, loaded" in server.err, server.err
