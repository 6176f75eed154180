"""What a store holds so far, as the collector and ``tracekit ingest`` watch it fill.

Reads of ``ingest_log``, ``events``, ``rejects`` and ``runs`` that answer
progress questions: each served source's loads and lines, the line a source
goes on from, a marker that changes whenever a batch is stored, whether the
store holds any line at all.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     kept_lines(store.con) > 0
    True
"""

from __future__ import annotations

from typing import Any

import duckdb

__all__ = ["kept_lines", "next_line", "served_sources", "stored_marker"]


def served_sources(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Each served source's loads and lines, by source name.

    Each row: ``source, loads, lines_read, accepted, rejected, duplicates``
    (sums, None for a source with no load counted).
    """
    return con.execute(
        "SELECT source, count(*), sum(lines_read), sum(accepted), sum(rejected),"
        " sum(duplicates) FROM ingest_log WHERE source LIKE 'serve:%'"
        " GROUP BY source ORDER BY source"
    ).fetchall()


def next_line(con: duckdb.DuckDBPyConnection, source: str) -> int:
    """The line ``source``'s next load starts at: 1 for a source never loaded."""
    row = con.execute(
        "SELECT coalesce(max(end_line), 1) FROM ingest_log WHERE source = ?", [source]
    ).fetchone()
    return int(row[0]) if row else 1


def stored_marker(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """A value that changes whenever a batch is stored or runs are classified."""
    row = con.execute(
        "SELECT count(*), coalesce(max(ingest_id), 0), coalesce(sum(accepted), 0) FROM ingest_log"
    ).fetchone()
    classified = con.execute("SELECT max(classified_at) FROM runs").fetchone()
    return (row, classified)


def kept_lines(con: duckdb.DuckDBPyConnection) -> int:
    """The records and rejected lines the store holds."""
    row = con.execute(
        "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM rejects)"
    ).fetchone()
    return int(row[0]) if row else 0
