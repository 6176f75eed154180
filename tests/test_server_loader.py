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


def test_a_child_acknowledged_before_its_root_joins_its_run_after_a_graceful_restart(
    tmp_path: Path,
) -> None:
    db = tmp_path / "late.duckdb"
    *children, root = _trace(7)  # search, billing (agent), ask_billing (tool); then front
    server = start(db)
    assert server.post("/v1/traces", _body(children), JSON_HEADERS)[0] == 200
    server.wait_loaded(0)  # fed: the spans are held, waiting for their root
    assert server.stop() == 0  # graceful: the trace without its root is kept, not mapped alone
    assert _rows(db, "SELECT count(*) FROM events")[0][0] == 0
    again = start(db)
    assert again.post("/v1/traces", _body([root]), JSON_HEADERS)[0] == 200
    again.wait_loaded(4)
    assert again.stop() == 0
    runs = _rows(db, "SELECT run_id, agent FROM runs")
    assert [agent for _, agent in runs] == ["front"]
    front = runs[0][0]
    calls = _rows(db, "SELECT agent, parent_run_id, run_id FROM invocations")
    assert [call[:2] for call in calls] == [("billing", front)]
    steps = _rows(db, "SELECT node, run_id FROM events WHERE type = 'node' ORDER BY ts_ms")
    assert steps == [("execute_tool ask_billing", front), ("search", calls[0][2])]
    assert _rows(db, "SELECT count(*) FROM rejects")[0][0] == 0
