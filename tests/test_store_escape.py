"""Hostile names in a real store: every text output escapes them the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._store_helpers import cli, line, run_lines, write

# Control characters (C0, DEL, C1), bidirectional controls and line separators:
# each could move the cursor, ring, rewrite the line, or reorder what follows.
RAW = [
    "\x1b",
    "\x07",
    "\r",
    "\x08",
    "\x7f",
    "\x85",
    "\x9b",
    "\u200e",
    "\u200f",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u2028",
    "\u2029",
]
RUN = "run\u202egpj.exe"
AGENT = "front\x1b[31m\x07\r\x85"
CHILD = "billing\u2066\u2028\x9b"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("escape")
    lines = run_lines(RUN, agent=AGENT, child=CHILD, ok=False)
    lines.append('{"type": "node", "name": "bad\u202e\x1b]0;title\x07\r"\n')  # a reject
    lines.append(line({"type": "run.start", "ts": 9, "runId": "r\u200f2", "agent": "a\u2029"}))
    path = tmp / "s.duckdb"
    cli("ingest", str(write(tmp / "hostile.jsonl", lines)), db=path)
    return path


def _assert_escaped(text: str) -> None:
    shown = [f"U+{ord(c):04X}" for c in RAW if c in text]
    assert not shown, f"printed raw: {shown}"


COMMANDS = {
    "runs table": ["runs"],
    "runs csv": ["runs", "--format", "csv"],
    "rejects table": ["rejects"],
    "rejects csv": ["rejects", "--format", "csv"],
    "sql table": ["sql", 'SELECT agent, run_id AS "\x1b[2J\u202e" FROM invocations'],
    "sql csv": [
        "sql",
        'SELECT agent, run_id AS "\x1b[2J\u202e" FROM invocations',
        "--format",
        "csv",
    ],
    "tree": ["tree", RUN],
    "fleet": ["fleet", "--color", "never"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_text_and_csv_show_hostile_names_escaped(db: Path, name: str) -> None:
    done = cli(*COMMANDS[name], db=db)
    _assert_escaped(done.stdout)
    _assert_escaped(done.stderr)


def test_tables_and_csv_escape_alike(db: Path) -> None:
    table = cli("runs", db=db, columns=400).stdout  # wide enough that no name is cut
    csv = cli("runs", "--format", "csv", db=db).stdout
    for escaped in ("run\\u202egpj.exe", "front\\x1b[31m\\x07\\x0d\\x85", "r\\u200f2", "a\\u2029"):
        assert escaped in table and escaped in csv
    tree = cli("tree", RUN, db=db).stdout
    assert "billing\\u2066\\u2028\\x9b" in tree
    assert "billing\\u2066\\u2028\\x9b" in cli("sql", "SELECT agent FROM invocations", db=db).stdout
    rejects = cli("rejects", "--format", "csv", db=db).stdout
    assert "bad\\u202e\\x1b]0;title\\x07" in rejects


def test_json_stays_exact(db: Path) -> None:
    rows = [json.loads(r) for r in cli("runs", "--format", "json", db=db).stdout.splitlines()]
    assert {r["run_id"] for r in rows} == {RUN, "r\u200f2"}
    assert {r["agent"] for r in rows} == {AGENT, "a\u2029"}
