"""Sessions: ``tracekit session``, ``tracekit runs --session``, ``Store.session``, ``open_session``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _store_helpers import cli, line, write

from tracekit import SessionNotFoundError, Store, TracekitError, open_session

EVIL_SESSION = "chat-\x1b[31m<script>alert(1)</script>"
EVIL_AGENT = "<img src=x onerror=alert(1)>\x1b[2J"


def _run(
    run: str,
    start: int,
    session: str | None,
    *,
    agent: str = "desk",
    child: str = "billing",
    ok: bool = True,
    tokens: int = 10,
) -> list[str]:
    start_rec: dict[str, Any] = {"type": "run.start", "ts": start, "runId": run, "agent": agent}
    if session is not None:
        start_rec["session"] = session
    exit_rec: dict[str, Any] = {
        "type": "exit", "ts": start + 5, "invocationId": f"{run}-i", "runId": f"{run}/c",
        "parentRunId": run, "agent": child, "ok": ok, "durationMs": 4,
        "usage": {"inputTokens": tokens, "outputTokens": tokens // 2, "models": ["m"]},
    }  # fmt: skip
    if not ok:
        exit_rec["error"] = {"code": "BOOM", "message": "it broke"}
    return [
        line(start_rec),
        line({"type": "enter", "ts": start + 1, "invocationId": f"{run}-i", "runId": f"{run}/c",
              "parentRunId": run, "agent": child}),
        line(exit_rec),
        line({"type": "run.end", "ts": start + 6, "runId": run, "ok": ok, "durationMs": 6}),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sessions")
    lines = [
        # Written out of order: a session lists its runs by start.
        *_run("r3", 3_000, "chat-1", tokens=30),
        *_run("r1", 1_000, "chat-1", tokens=10),
        *_run("r2", 2_000, "chat-1", ok=False, tokens=20),
        *_run("r4", 4_000, "chat-2", tokens=40),
        *_run("r5", 5_000, None),
        *_run("r6", 6_000, EVIL_SESSION, agent=EVIL_AGENT, child=EVIL_AGENT),
    ]
    path = base / "s.duckdb"
    with Store(path) as store:
        store.ingest(write(base / "runs.jsonl", lines))
    return path


def test_session_text_lists_its_runs_in_order_of_start(db: Path) -> None:
    out = cli("session", "chat-1", db=db).stdout.splitlines()
    assert out[0] == "session chat-1 · 3 runs, 1 failed · 60 in / 30 out tokens"
    assert [row.split()[2] for row in out[1:]] == ["r1", "r2", "r3"]
    assert "failed:child" in out[2] and "ok" in out[1]
    assert out[1].endswith("6ms  10 in / 5 out")


def test_session_json_has_the_counts_and_each_run(db: Path) -> None:
    doc = json.loads(cli("session", "chat-1", "--json", db=db).stdout)
    assert (doc["session_id"], doc["run_count"], doc["failed_runs"]) == ("chat-1", 3, 1)
    assert (doc["input_tokens"], doc["output_tokens"]) == (60, 30)
    assert [r["run_id"] for r in doc["runs"]] == ["r1", "r2", "r3"]
    assert [r["outcome"] for r in doc["runs"]] == ["ok", "failed:child", "ok"]
    assert doc["runs"][0]["duration_ms"] == 6.0 and doc["runs"][0]["input_tokens"] == 10
    same = json.loads(cli("session", "chat-1", "--format", "json", db=db).stdout)
    assert same == doc


def test_runs_filter_by_session_and_show_it(db: Path) -> None:
    rows = [
        json.loads(x)
        for x in cli("runs", "--session", "chat-1", "--format", "json", db=db).stdout.splitlines()
    ]
    assert sorted(r["run_id"] for r in rows) == ["r1", "r2", "r3"]
    assert {r["session_id"] for r in rows} == {"chat-1"}
    table = cli("runs", db=db).stdout
    assert "session_id" in table.splitlines()[0] and "chat-2" in table
    # the token columns come after: in the table when they fit, always in CSV
    assert "input_tokens" in cli("runs", "--format", "csv", db=db).stdout.splitlines()[0]


def test_a_missing_session_is_an_error_naming_those_there(db: Path) -> None:
    done = cli("session", "chat-9", db=db, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Error: session chat-9 is not in" in done.stderr
    assert "chat-1" in done.stderr and "chat-2" in done.stderr
    assert "\x1b" not in done.stderr  # the hostile session id listed, escaped
    with Store(db, read_only=True) as store, pytest.raises(SessionNotFoundError) as info:
        store.session("chat-9")
    assert isinstance(info.value, TracekitError) and info.value.session_id == "chat-9"
    with pytest.raises(SessionNotFoundError):
        open_session(db, "chat-9")


def test_hostile_session_ids_and_agent_names_are_escaped(db: Path) -> None:
    text = cli("session", EVIL_SESSION, db=db).stdout
    assert "\x1b" not in text and "\\x1b[31m" in text and "\\x1b[2J" in text
    csv = cli("session", EVIL_SESSION, "--format", "csv", db=db).stdout
    assert "\x1b" not in csv and "\\x1b[2J" in csv
    runs_csv = cli("runs", "--session", EVIL_SESSION, "--format", "csv", db=db).stdout
    assert "\x1b" not in runs_csv and "r6" in runs_csv
    page = open_session(db, EVIL_SESSION)._repr_html_()
    assert "<script>" not in page and "<img" not in page and "\x1b" not in page
    assert "&lt;img src=x" in page


def test_open_session_from_a_path_or_a_store(db: Path) -> None:
    view = open_session(db, "chat-1")
    assert view.runs["run_id"].tolist() == ["r1", "r2", "r3"]
    assert view.summary == {
        "session_id": "chat-1", "runs": 3, "failed_runs": 1, "input_tokens": 60, "output_tokens": 30,
    }  # fmt: skip
    assert str(view) == cli("session", "chat-1", db=db).stdout.rstrip("\n")
    assert repr(view).startswith("<SessionView session chat-1 · 3 runs")
    html = view._repr_html_()
    assert html.count("<tr") == 4 and "failed:child" in html
    with Store(db, read_only=True) as store:
        assert open_session(store, "chat-2").runs["run_id"].tolist() == ["r4"]
        assert store.runs(session="chat-2")["run_id"].tolist() == ["r4"]


def test_the_fleet_report_counts_sessions(db: Path) -> None:
    doc = json.loads(cli("fleet", "--format", "json", db=db).stdout)
    assert doc["sessions"] == {"sessions": 3, "failed": 1, "runs": 5}
    text = cli("fleet", "--color", "never", db=db).stdout
    assert "Sessions: 3 (1 with a failed run; 5 runs in sessions)" in text
    assert "\x1b" not in text
