"""HTTP framing and the token by the book: no smuggled request, a case-blind scheme, no empty token."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from _server_helpers import TRACEKIT, control_body, send_control, start


def _raw(url: str, data: bytes) -> bytes:
    """Send raw bytes on one connection; everything the server answers until it closes."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(data)
        answer = b""
        while True:
            piece = sock.recv(65536)
            if not piece:  # the server closed the connection
                return answer
            answer += piece


def test_content_length_with_transfer_encoding_is_a_400_and_the_connection_closes(
    tmp_path: Path,
) -> None:
    server = start(tmp_path / "framing.duckdb")
    try:
        host = server.url.removeprefix("http://")
        smuggled = (
            f"POST /v1/traces HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(control_body(9))}\r\n\r\n"
        ).encode() + control_body(9)
        chunk = b"0\r\n\r\n" + smuggled
        head = (
            f"POST /v1/traces HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(chunk)}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        answer = _raw(server.url, head + chunk)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert answer.count(b"HTTP/1.1 ") == 1, answer  # the smuggled request never ran
        assert b"Content-Length and Transfer-Encoding" in answer
        send_control(server, 1)
        assert server.get("/api/runs/control-9/tree")[0] == 404
    finally:
        assert server.stop() == 0, server.err
    assert "Traceback" not in server.err


def test_the_bearer_scheme_is_case_insensitive_and_the_token_exact(tmp_path: Path) -> None:
    os.environ["TRACEKIT_SERVE_TOKEN"] = "s3cret-token"
    try:
        server = start(tmp_path / "token.duckdb")
    finally:
        del os.environ["TRACEKIT_SERVE_TOKEN"]
    try:
        json_type = {"Content-Type": "application/json"}
        for scheme, status in [("bearer", 200), ("BEARER", 200), ("Bearer", 200), ("Basic", 401)]:
            headers = {**json_type, "Authorization": f"{scheme} s3cret-token"}
            assert server.post("/v1/traces", control_body(1), headers)[0] == status, scheme
        wrong = {**json_type, "Authorization": "bearer s3cret-tokeN"}
        assert server.post("/v1/traces", control_body(2), wrong)[0] == 401
    finally:
        assert server.stop() == 0, server.err


def test_an_empty_token_is_refused_with_one_error_line(tmp_path: Path) -> None:
    db = str(tmp_path / "empty.duckdb")
    env = {k: v for k, v in os.environ.items() if k != "TRACEKIT_SERVE_TOKEN"}
    for args, extra in [(["--token", ""], {}), ([], {"TRACEKIT_SERVE_TOKEN": ""})]:
        done = subprocess.run(
            [TRACEKIT, "serve", "--db", db, "--port", "0", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**env, **extra},
        )
        assert done.returncode != 0
        assert "Error: refusing an empty token" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        assert "TRACEKIT_SERVE_TOKEN" in done.stderr  # what to do next
