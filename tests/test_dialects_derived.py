"""The user's dialect through the stored spans: ``tracekit rederive`` and ``tracekit serve``.

The spans are kept as received, so a dialect given after an ingest derives
them again as the app's agents; ``derivations`` names the file that did.
The truth is what the app's code did (tests/_plain_app.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from _plain_app import DIALECT, loop_run
from _server_helpers import start
from test_dialects_user import tracekit

_RUNS = "SELECT agent, outcome, invocations, circle FROM runs"
_DIALECTS = "SELECT DISTINCT dialects FROM derivations"
_LOOP = [("triage", "failed:recursion", 3, "billing -> refunds -> billing")]


def _store(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_rederive_with_a_dialect_reads_the_stored_spans_as_the_apps_agents(
    tmp_path: Path,
) -> None:
    loop, _ = loop_run(tmp_path / "loop.otlp.json")
    dialect = tmp_path / "app.toml"
    dialect.write_text(DIALECT)
    db = tmp_path / "s.duckdb"
    assert tracekit("ingest", str(loop), "--db", str(db), cwd=tmp_path).returncode == 0
    assert _store(db, _DIALECTS) == [(None,)]  # read by evidence, no dialect of the user's
    done = tracekit("rederive", "--dialect", str(dialect), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _store(db, _RUNS) == _LOOP
    assert _store(db, _DIALECTS) == [(str(dialect),)]


def test_serve_with_a_dialect_derives_what_it_receives_with_it(tmp_path: Path) -> None:
    loop, _ = loop_run(tmp_path / "loop.otlp.json")
    dialect = tmp_path / "app.toml"
    dialect.write_text(DIALECT)
    db = tmp_path / "served.duckdb"
    server = start(db, "--dialect", str(dialect))
    try:
        for line in loop.read_text().splitlines():
            doc = json.loads(line)
            status, body, _ = server.post(
                "/v1/traces", json.dumps(doc).encode(), {"Content-Type": "application/json"}
            )
            assert status == 200, body
    finally:
        assert server.stop() == 0, server.err
    assert _store(db, _RUNS) == _LOOP
    assert _store(db, _DIALECTS) == [(str(dialect),)]
