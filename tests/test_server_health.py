"""``/healthz`` tells the truth: a stopped child process is not ok, with the backlog in the body.

A loader that makes no progress while batches or traces to derive wait
makes ``/healthz`` 503 with the backlog; a stopped decoding process leaves
requests waiting: each request is answered 503 within the decode deadline
and the process is replaced. Once the stage works again, a control trace is
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
from test_server_decode_pool import _child
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


def test_traces_waiting_to_be_derived_with_no_progress_are_a_stall(tmp_path: Path) -> None:
    from tracekit.server.loader import Loader
    from tracekit.server.spool import Spool
    from tracekit.store import Store

    spool = Spool(tmp_path / "spool", limit=1 << 20, deliver=lambda *args: None)
    with contextlib.closing(_Stopping(spool)), Store(tmp_path / "stall.duckdb") as store:
        loader = Loader(store, spool)
        loader.load_spans(_cycle_of(loader, _batch(0, 3)))
        assert loader.pending_spans == 3 and loader.stalled() is None
        loader.progress_at -= 60  # the loader thread made no step for a minute
        assert "and 3 traces to derive" in (loader.stalled() or "")
        loader.load_once(final=True)
        assert loader.pending_spans == 0 and loader.stalled() is None


def _cycle_of(loader: Any, body: bytes) -> Any:
    from tracekit.server.decode import received_otlp_json, spans_entry
    from tracekit.server.loader import _Cycle
    from tracekit.server.spool import encode_payload

    payload = encode_payload(spans_entry(received_otlp_json(body), "serve:otlp"))
    return _Cycle(entries=[(0, payload, 0.0)], end=len(payload))


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


class _Stopping:
    """Closes a spool's segment (``contextlib.closing``) when the test is done with it."""

    def __init__(self, spool: Any) -> None:
        self.spool = spool

    def close(self) -> None:
        self.spool.stop()
