"""The loader keeps acknowledged spans until their trace is whole, across stops and restarts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from _server_helpers import start
from test_server_spool import JSON_HEADERS, _trace


def _body(spans: list[dict[str, Any]]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_trace_without_its_root_is_an_incomplete_run_until_the_root_comes_after_a_restart(
    tmp_path: Path,
) -> None:
    db = tmp_path / "late.duckdb"
    *children, root = _trace(7)  # search, billing (agent), ask_billing (tool); then front
    server = start(db)
    assert server.post("/v1/traces", _body(children), JSON_HEADERS)[0] == 200
    server.wait_loaded(3)
    assert server.stop() == 0  # graceful: the trace is derived as it is
    assert "3 spans stored (0 already there), 0 batches pending, 0 spans rejected" in server.err
    assert "everything acknowledged is in the store" in server.err
    assert _rows(db, "SELECT count(*) FROM spans")[0][0] == 3
    early = _rows(db, "SELECT run_id, status, outcome FROM runs")
    assert len(early) == 1 and early[0][2] == "incomplete"
    again = start(db)
    assert again.post("/v1/traces", _body([root]), JSON_HEADERS)[0] == 200
    again.post("/v1/traces", _body(children[:1]), JSON_HEADERS)  # a span sent twice: stored once
    again.wait_loaded(2)
    assert again.stop() == 0
    assert "1 spans stored (1 already there)" in again.err
    assert _rows(db, "SELECT count(*) FROM spans")[0][0] == 4
    runs = _rows(db, "SELECT run_id, agent FROM runs")
    assert [agent for _, agent in runs] == ["front"]  # one whole run, the early one replaced
    front = runs[0][0]
    calls = _rows(db, "SELECT agent, parent_run_id, run_id FROM invocations")
    assert [call[:2] for call in calls] == [("billing", front)]
    steps = _rows(db, "SELECT node, run_id FROM events WHERE type = 'node' ORDER BY ts_ms")
    assert steps == [("execute_tool ask_billing", front), ("search", calls[0][2])]
    assert _rows(db, "SELECT count(*) FROM rejects")[0][0] == 0
