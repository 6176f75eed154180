"""Helpers for the spans tests: OTLP spans taken apart and written again, stores compared table by table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

#: Each derived table, with the columns that say when or under which ingest, not what.
DERIVED = {
    "events": "ingest_id",
    "rejects": "ingest_id",
    "invocations": "",
    "steps": "",
    "runs": "classified_at",
    "closure": "",
    "fleet_calls": "",
    "derivations": "derived_at",
}

Entry = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]  # resource, scope, span


def spans_of(path: Path) -> list[Entry]:
    """Every span of an OTLP JSON lines file, with its resource and scope."""
    out: list[Entry] = []
    for text in path.read_text().splitlines():
        for rs in json.loads(text)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    out.append((rs.get("resource", {}), ss.get("scope", {}), span))
    return out


def write_spans(path: Path, entries: list[Entry], per_line: int = 3) -> Path:
    """The spans as OTLP JSON lines, ``per_line`` spans a line."""
    lines = []
    for i in range(0, len(entries), per_line):
        chunk = entries[i : i + per_line]
        doc = {
            "resourceSpans": [
                {"resource": r, "scopeSpans": [{"scope": s, "spans": [span]}]}
                for r, s, span in chunk
            ]
        }
        lines.append(json.dumps(doc, separators=(",", ":")))
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def differences(a: Path, b: Path) -> dict[str, int]:
    """Rows of each derived table that one store has and the other has not (EXCEPT ALL, both ways)."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    found: dict[str, int] = {}
    for table, skip in DERIVED.items():
        cols = f"* EXCLUDE ({skip})" if skip else "*"
        for x, y in (("a", "b"), ("b", "a")):
            row = con.execute(
                f"SELECT count(*) FROM (SELECT {cols} FROM {x}.{table}"
                f" EXCEPT ALL SELECT {cols} FROM {y}.{table})"
            ).fetchone()
            if row and row[0]:
                found[f"{table} ({x} not {y})"] = int(row[0])
    con.close()
    return found


def count(db: Path, sql: str) -> Any:
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(sql).fetchone()
        return row[0] if row else None
    finally:
        con.close()
