"""The header deadline: a connection that sends its headers too slowly is closed.

uvicorn with the server's protocol class, in a thread, on a free loopback
port, serving a one-line ASGI app; the slow client is a raw socket.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from tracekit.server.protocol import protocol_class


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(_app, log_level="warning", http=protocol_class(1.0), lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(10)
    sock.close()


def _closed_within(conn: socket.socket, seconds: float) -> float:
    began = time.monotonic()
    conn.settimeout(seconds)
    while conn.recv(4096):
        pass
    return time.monotonic() - began


def test_headers_that_never_end_are_cut_off(port: int) -> None:
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    for _ in range(3):  # a byte now and then does not extend the deadline
        time.sleep(0.2)
        conn.sendall(b"a")
    assert _closed_within(conn, 3.0) < 2.0
    conn.close()


def test_a_quiet_new_connection_is_closed_and_a_normal_one_served(port: int) -> None:
    quiet = socket.create_connection(("127.0.0.1", port))
    normal = socket.create_connection(("127.0.0.1", port))
    normal.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert normal.recv(4096).startswith(b"HTTP/1.1 200")
    # After its response, the next request's headers have the deadline again.
    assert _closed_within(normal, 3.0) < 2.0
    assert _closed_within(quiet, 3.0) < 2.0
    quiet.close()
    normal.close()
