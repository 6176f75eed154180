"""Ingest one OTLP source both ways (set-based and per span) and compare the stores table by table."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tracekit.store.db import connect
from tracekit.store.ingest import IngestReport, ingest_paths

# Times of the ingest itself, and each record's position in its line (the
# per-span path numbers records per chunk it maps them in): not the records.
_SKIP = {"ingest_id", "item", "started_at", "finished_at", "applied_at", "classified_at"}


def ingest_both(
    tmp: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[IngestReport, IngestReport, list[tuple[str, int, int]]]:
    """Both reports and, per store table, the rows only one of the two stores has."""
    reports = []
    for mode in ("0", "1"):
        monkeypatch.setenv("TRACEKIT_OTLP_COLUMNS", mode)
        con = connect(tmp / f"store{mode}.duckdb")
        try:
            reports.append(ingest_paths(con, [source]))
        finally:
            con.close()
    return reports[0], reports[1], differences(tmp / "store0.duckdb", tmp / "store1.duckdb")


def differences(
    a: Path, b: Path, tables: tuple[str, ...] = (), skip: frozenset[str] = frozenset()
) -> list[tuple[str, int, int]]:
    """``(table, rows only in a, rows only in b)`` for each table that differs (EXCEPT ALL both ways).

    ``tables`` limits the comparison to those tables (all when empty);
    ``skip`` names more columns to leave out.
    """
    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    everything = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'a' ORDER BY 1"
    ).fetchall()
    found = []
    for (table,) in [(t,) for (t,) in everything if not tables or t in tables]:
        names = con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'a' AND table_name = ?",
            [table],
        ).fetchall()
        cols = ", ".join(f'"{n}"' for (n,) in names if n not in _SKIP and n not in skip)
        only = [
            con.execute(
                f"SELECT count(*) FROM (SELECT {cols} FROM {x}.{table}"
                f" EXCEPT ALL SELECT {cols} FROM {y}.{table})"
            ).fetchall()[0][0]
            for x, y in (("a", "b"), ("b", "a"))
        ]
        if any(only):
            found.append((table, *only))
    con.close()
    return found


def spans_line(report: IngestReport) -> list[str]:
    return [s.spans.line() if s.spans else "" for s in report.sources]
