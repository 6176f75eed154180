"""Durability and overload: an acknowledged span survives SIGKILL; a full spool says 503, never drops.

The real server (the installed command) under load from several threads;
what counts is what got a 200.
"""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from _server_helpers import post, start

JSON_HEADERS = {"Content-Type": "application/json"}


def _trace(n: int) -> list[dict[str, Any]]:
    """One small agent trace: a root agent that delegates through a tool to a child agent."""
    trace = f"{n:032x}"
    t0 = 1_700_000_000_000_000_000 + n * 1_000_000

    def span(i: int, parent: int | None, name: str, agent: str | None = None) -> dict[str, Any]:
        attrs = []
        if agent:
            attrs = [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": agent}},
            ]
        return {
            "traceId": trace,
            "spanId": f"{n:012x}{i:04x}",
            "parentSpanId": f"{n:012x}{parent:04x}" if parent is not None else "",
            "name": name,
            "startTimeUnixNano": str(t0 + i * 1000),
            "endTimeUnixNano": str(t0 + 900_000 - i * 1000),
            "attributes": attrs,
        }

    return [
        span(4, 3, "search"),
        span(3, 2, "invoke_agent billing", "billing"),
        span(2, 1, "execute_tool ask_billing"),
        span(1, None, "invoke_agent front", "front"),
    ]


def _batch(first: int, count: int) -> bytes:
    spans = [s for n in range(first, first + count) for s in _trace(n)]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def _client(
    url: str, start_at: int, stop: threading.Event, acked: list[int], busy: list[int]
) -> None:
    """Post batches of 20 traces until told to stop; note the first trace of each batch acked."""
    n = start_at
    while not stop.is_set():
        try:
            status, _, headers = post(url + "/v1/traces", _batch(n, 20), JSON_HEADERS)
        except (OSError, http.client.HTTPException):  # killed mid-answer: not acknowledged
            if stop.is_set():
                return
            time.sleep(0.05)
            continue
        if status == 200:
            acked.append(n)
            n += 20
        elif status in (429, 503):
            busy.append(status)
            assert headers.get("retry-after") == "1"
            time.sleep(0.2)  # sooner than Retry-After: the test has no time to spare
        else:
            raise AssertionError(status)


def _load(
    url: str, enough: Callable[[list[int], list[int]], bool], clients: int = 3, kill: Any = None
) -> tuple[list[int], list[int]]:
    """Post from ``clients`` threads until ``enough(acked, busy)``; then ``kill``, then stop them.

    The wait is for the event, not for a time: a loaded machine only makes it
    take longer (a minute bounds a hang).
    """
    stop = threading.Event()
    acked: list[int] = []
    busy: list[int] = []
    threads = [
        threading.Thread(target=_client, args=(url, 1 + i * 10_000_000, stop, acked, busy))
        for i in range(clients)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while not enough(acked, busy):
        assert time.monotonic() < deadline, f"{len(acked)} acknowledged, {len(busy)} busy"
        assert any(t.is_alive() for t in threads), "every client stopped"
        time.sleep(0.02)
    if kill is not None:
        kill()  # while requests are in flight
    stop.set()
    for t in threads:
        t.join(60)
    return acked, busy


def _stored_roots(db: Path) -> tuple[set[str], int, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        roots = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
        total, distinct = con.execute(
            "SELECT count(*), count(DISTINCT event_key) FROM events"
        ).fetchone()  # type: ignore[misc]
    finally:
        con.close()
    return roots, int(total), int(distinct)


def _expected_roots(acked: list[int]) -> set[str]:
    return {f"{n:012x}0001" for first in acked for n in range(first, first + 20)}


def test_sigkill_under_load_then_restart_keeps_every_acknowledged_span_once(tmp_path: Path) -> None:
    db = tmp_path / "crash.duckdb"
    server = start(db)
    # a dozen batches acknowledged, the clients still sending: the kill comes mid-stream
    acked, _ = _load(
        server.url, lambda acked, _: len(acked) >= 12, kill=lambda: server.stop(signal.SIGKILL)
    )
    assert server.proc.returncode == -signal.SIGKILL
    assert len(acked) > 5
    again = start(db)  # replays the spool past the checkpoint
    assert again.stop() == 0
    roots, total, distinct = _stored_roots(db)
    missing = _expected_roots(acked) - roots
    assert not missing, f"{len(missing)} acknowledged traces lost"
    assert total == distinct  # nothing twice
    con = duckdb.connect(str(db), read_only=True)
    try:
        invocations = con.execute("SELECT count(*) FROM invocations").fetchone()[0]  # type: ignore[index]
    finally:
        con.close()
    assert invocations >= len(_expected_roots(acked))  # each trace's delegation is there too


def test_overload_answers_503_and_loses_nothing_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "busy.duckdb"
    server = start(db, "--spool-limit", "20000")
    # the spool full more than once, and batches acknowledged between the refusals
    acked, busy = _load(
        server.url, lambda acked, busy: len(busy) >= 3 and len(acked) >= 5, clients=4
    )
    status = json.loads(server.get("/api/ingest")[1])
    assert server.stop() == 0
    assert busy and set(busy) <= {429, 503}
    assert status["busy_answers"] >= len(busy)
    roots, total, distinct = _stored_roots(db)
    assert _expected_roots(acked) <= roots
    assert total == distinct


def test_a_torn_last_frame_is_cut_and_the_rest_replayed(tmp_path: Path) -> None:
    from tracekit.server.spool import Checkpoint, Entry, Spool, decode_payload

    got: list[tuple[int, int, Entry, bytes, int]] = []
    spool = Spool(tmp_path / "s", limit=1 << 20, deliver=lambda *item: got.append(item))
    spool.start()
    ends = [spool.append(Entry("serve:records", lines=[b"%d" % i])).result(10) for i in range(3)]
    spool.stop()
    assert [end for _, end, *_ in got] == ends
    assert [decode_payload(item[3]) for item in got] == [item[2] for item in got]
    assert [item[4] for item in got] == [1, 1, 1]
    segment = next((tmp_path / "s").glob("*.seg"))
    with open(segment, "ab") as out:
        out.write(b"TKS1\xff\xff\x00\x00half a frame")  # a write the crash cut short
    again = Spool(tmp_path / "s", limit=1 << 20, deliver=lambda *item: None)
    assert again.position == ends[-1] == segment.stat().st_size
    again.write_checkpoint(Checkpoint(ends[0], {"t": 1}))
    assert again.read_checkpoint() == Checkpoint(ends[0], {"t": 1})
    assert [e.lines for _, _, e in again.replay(ends[0])] == [[b"1"], [b"2"]]
    again.stop()
