"""``/healthz`` tells the truth: a stopped child process is not ok, with the backlog in the body.

A stopped mapping process leaves the loader waiting while batches pile up; a
stopped decoding process leaves requests waiting: the first makes ``/healthz``
503 with the backlog, the second answers each request 503 within the decode
deadline and is replaced. Once the stage works again, a control trace is
stored; the stop message says what is stored, pending and rejected.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from _server_helpers import Server, send_control, start
from test_server_mapper import _child
from test_server_recovery import JSON, _batch

from tracekit.server.health import process_state, stalled_for


def _health(server: Server, status: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    got: tuple[int, bytes] = (0, b"")
    while time.monotonic() < deadline:
        got = server.get("/healthz")
        if got[0] == status:
            return dict(json.loads(got[1]))
        time.sleep(0.2)
    raise AssertionError(f"/healthz not {status} within {timeout} s: {got}")


def test_a_stopped_mapping_process_is_not_ok_with_the_backlog(tmp_path: Path) -> None:
    server = start(tmp_path / "stalled.duckdb")
    try:
        send_control(server, 0)
        mapper = _child(server, "tracekit-mapper")
        os.kill(mapper, signal.SIGSTOP)
        try:
            for i in range(3):
                assert server.post("/v1/traces", _batch(i), JSON)[0] == 200
            health = _health(server, 503)
            assert f"the mapping process ({mapper}) is stopped" in health["error"]
            assert health["backlog"]["spool_backlog_bytes"] > 0 or health["backlog"]["loading"]
        finally:
            os.kill(mapper, signal.SIGCONT)
        assert _health(server, 200)["backlog"]["spool_backlog_bytes"] >= 0
        send_control(server, 1)
    finally:
        assert server.stop() == 0, server.err
    assert "of 602 spans and lines acknowledged: 602 stored, 0 rejected" in server.err, server.err


def test_a_stopped_decoding_process_gets_503_within_the_deadline_and_is_replaced(
    tmp_path: Path,
) -> None:
    server = start(tmp_path / "decode.duckdb")
    try:
        decoder = _child(server, "tracekit-decode")
        os.kill(decoder, signal.SIGSTOP)
        try:
            assert "decoding process" in _health(server, 503)["error"]
            began = time.monotonic()
            status, body, headers = server.post("/v1/traces", _batch(0), JSON)
            waited = time.monotonic() - began
            assert status == 503 and headers["retry-after"] == "1", body
            assert "did no work for 10 s" in json.loads(body)["message"]
            assert waited < 45  # the deadline (10 s), never the client's own timeout (60 s)
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed and replaced already
                os.kill(decoder, signal.SIGCONT)
        send_control(server, 1)
        assert _child(server, "tracekit-decode") != decoder
        _health(server, 200)
    finally:
        assert server.stop() == 0, server.err
    assert "1 stored" in server.err


def test_a_stage_is_stalled_only_with_work_waiting_past_the_limit() -> None:
    assert stalled_for(waiting=3, since=0.0, now=20.0, after=15.0) == "no progress for 20 s"
    assert stalled_for(waiting=0, since=0.0, now=99.0, after=15.0) is None
    assert stalled_for(waiting=3, since=0.0, now=10.0, after=15.0) is None
    assert process_state(2**22 + 12345) is None  # no such process
