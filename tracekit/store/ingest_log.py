"""The ``ingest_log`` rows of an ingest: where it starts, what it has stored, and undoing it.

An ingest commits each chunk of a source together with its ``ingest_log``
row's counts, so at any moment (a SIGKILL, a full disk) the row accounts for
exactly the records of its ``ingest_id`` in ``events`` and ``rejects``. A plain
JSON-lines file also records, with each chunk, the offset it is read to, and
the next ingest continues from there. A source read as one unit (gzip, OTLP,
whose spans are held across lines) records its end only once read whole; an
interrupted read of it is removed and read again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from tracekit.intake.sources import Source
from tracekit.store.load import Counts
from tracekit.store.sources import fingerprint

__all__ = [
    "Resume",
    "first_underived",
    "mark_derived",
    "next_ingest_id",
    "open_row",
    "record_progress",
    "resume_point",
    "transaction",
    "undo_since",
    "undo_unread",
]


@dataclass
class Resume:
    """Where an ingest of a source starts: after what an earlier ingest stored of it."""

    start: int = 0
    first_line: int = 1
    unchanged: bool = False


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block in one transaction; roll it back on any exception."""
    con.execute("BEGIN")
    try:
        yield
    except BaseException:
        # After a fatal error (a failed checkpoint) the connection refuses even
        # ROLLBACK; the error that caused it is the one to report.
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def next_ingest_id(con: duckdb.DuckDBPyConnection) -> int:
    """The id the next ``ingest_log`` row gets."""
    row = con.execute("SELECT coalesce(max(ingest_id), 0) + 1 FROM ingest_log").fetchall()[0]
    return int(row[0]) if row else 1


def first_underived(con: duckdb.DuckDBPyConnection) -> int:
    """The first ingest whose records are not derived yet: the next one, or one cut short."""
    row = con.execute("SELECT min(ingest_id) FROM ingest_log WHERE finished_at IS NULL").fetchall()
    return int(row[0][0]) if row and row[0][0] is not None else next_ingest_id(con)


def mark_derived(con: duckdb.DuckDBPyConnection, since: int) -> None:
    """Mark every ingest from ``since`` on finished (its records are derived)."""
    con.execute(
        "UPDATE ingest_log SET finished_at = ? WHERE ingest_id >= ? AND finished_at IS NULL",
        [_now(), since],
    )


def resume_point(con: duckdb.DuckDBPyConnection, source: Source, size: int) -> Resume:
    """Where to start reading: after what the last ingest of this file stored, if it only grew.

    The last ingest may have been cut short: its row then says how far its
    committed chunks reach.
    """
    if source.key is None:
        return Resume()
    rows = con.execute(
        "SELECT end_offset, end_line, hash, size FROM ingest_log"
        " WHERE path = ? AND end_offset IS NOT NULL ORDER BY ingest_id DESC LIMIT 1",
        [source.key],
    ).fetchall()
    if not rows:
        return Resume()
    end, end_line, digest, old_size = int(rows[0][0]), int(rows[0][1]), rows[0][2], rows[0][3]
    if source.gz:  # a compressed file is one unit: the same bytes, or read again
        same = old_size == size and digest == fingerprint(source.path, size)
        return Resume(unchanged=same)
    if size < end or fingerprint(source.path, end) != digest:
        return Resume()  # replaced or rewritten: read it all; duplicates are counted
    return Resume(start=end, first_line=end_line, unchanged=size == end)


def open_row(
    con: duckdb.DuckDBPyConnection,
    ingest_id: int,
    source: Source,
    chosen: str,
    size: int,
    resume: Resume,
) -> None:
    """Insert the ingest's row for one source, before any of its records."""
    con.execute(
        "INSERT INTO ingest_log (ingest_id, source, path, format, size, start_offset,"
        " first_line, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            ingest_id,
            source.label,
            source.key,
            chosen,
            size,
            resume.start,
            resume.first_line,
            _now(),
        ],
    )


def record_progress(
    con: duckdb.DuckDBPyConnection,
    ingest_id: int,
    counts: Counts,
    *,
    end: tuple[int, int, str] | None = None,
) -> None:
    """Set the row's counts and, given ``(end_offset, end_line, hash)``, how far it reaches.

    Called inside the transaction of the records counted, so the row and
    ``events`` never disagree.
    """
    c = counts
    values: list[object] = [c.read, c.accepted, c.rejected, c.duplicates]
    sql = "UPDATE ingest_log SET lines_read = ?, accepted = ?, rejected = ?, duplicates = ?"
    if end is not None:
        sql += ", end_offset = ?, end_line = ?, hash = ?"
        values += list(end)
    con.execute(sql + " WHERE ingest_id = ?", [*values, ingest_id])


def undo_unread(con: duckdb.DuckDBPyConnection, source: Source) -> None:
    """Remove what an interrupted read of this file stored, when it cannot be continued.

    Such a read has no ``end_offset`` and is not derived: nothing outside its
    own rows refers to it, and the source is about to be read whole again.
    """
    if source.key is None:
        return
    rows = con.execute(
        "SELECT ingest_id FROM ingest_log"
        " WHERE path = ? AND end_offset IS NULL AND finished_at IS NULL",
        [source.key],
    ).fetchall()
    if not rows:  # the usual case: no scan of events
        return
    ids = [int(r[0]) for r in rows]
    with transaction(con):
        for table in ("spans", "events", "rejects", "ingest_log"):
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, ingest_id)", [ids])


def undo_since(con: duckdb.DuckDBPyConnection, since: int) -> list[str]:
    """Remove every ingest from ``since`` on (none is derived yet); return their sources."""
    with transaction(con):
        rows = con.execute(
            "SELECT DISTINCT source FROM ingest_log WHERE ingest_id >= ? ORDER BY source",
            [since],
        ).fetchall()
        for table in ("spans", "events", "rejects", "ingest_log"):
            con.execute(f"DELETE FROM {table} WHERE ingest_id >= ?", [since])
    return [str(r[0]) for r in rows]


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
