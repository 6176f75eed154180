"""Loading one batch of lines into ``events`` and ``rejects``.

DuckDB parses and checks the batch (:mod:`tracekit.store.parse_sql`); the few
lines it does not accept are decoded by msgspec in Python, which either
accepts them (and their normalized JSON takes the fast path) or says why not.
Duplicates (by ``event_key``) within the batch and against the store are
counted and not inserted: the first one read wins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import duckdb
import msgspec
import pyarrow as pa

from tracekit.events import decode_event, encode_event
from tracekit.store.parse_sql import EVENT_COLUMNS, PARSE_SQL, TRUSTED_PARSE_SQL
from tracekit.validate import reject_reason

__all__ = ["Counts", "drop_duplicates", "load_batch", "reject_rows"]


@dataclass
class Counts:
    """How the lines of a batch were accounted for."""

    read: int = 0
    accepted: int = 0
    rejected: int = 0
    duplicates: int = 0

    def add(self, other: Counts) -> None:
        self.read += other.read
        self.accepted += other.accepted
        self.rejected += other.rejected
        self.duplicates += other.duplicates


_COLUMNS = ", ".join(EVENT_COLUMNS)
_SELECT = ", ".join(
    "$ingest_id" if c == "ingest_id" else "$source" if c == "source" else c for c in EVENT_COLUMNS
)

_INSERT_SQL = f"""
INSERT INTO events ({_COLUMNS})
SELECT {_SELECT} FROM ({PARSE_SQL}) WHERE fast_ok
"""
# Lines msgspec accepted on the slow path, written out again: stored as they are.
_INSERT_TRUSTED_SQL = _INSERT_SQL.replace(PARSE_SQL, TRUSTED_PARSE_SQL)
_SLOW_SQL = f"SELECT line, item, raw FROM ({PARSE_SQL}) WHERE NOT fast_ok ORDER BY line, item"
_LINES_SQL = "SELECT count(*) FROM _batch WHERE trim(text) <> ''"

# Duplicates of one ingest's records, found by key_hash first (a scan of one
# integer column), then confirmed on the whole key; the first one read wins
# (records of earlier ingests are already unique).
_DUPLICATES_SQL = """
WITH mine AS (SELECT DISTINCT key_hash FROM events WHERE ingest_id = $ingest_id),
clash AS (
    SELECT key_hash FROM events WHERE key_hash IN (SELECT key_hash FROM mine)
    GROUP BY key_hash HAVING count(*) > 1
),
ranked AS (
    SELECT rowid AS rid, ingest_id,
        row_number() OVER (PARTITION BY event_key ORDER BY ingest_id, line, item) AS n
    FROM events WHERE key_hash IN (SELECT key_hash FROM clash)
)
SELECT rid FROM ranked WHERE n > 1 AND ingest_id = $ingest_id
"""


def drop_duplicates(con: duckdb.DuckDBPyConnection, ingest_id: int) -> int:
    """Delete the records of an ingest already stored before; return how many."""
    rows = con.execute(_DUPLICATES_SQL, {"ingest_id": ingest_id}).fetchall()
    if not rows:
        return 0
    con.execute("CREATE OR REPLACE TEMP TABLE _dups (rid BIGINT)")
    con.executemany("INSERT INTO _dups VALUES (?)", rows)
    con.execute("DELETE FROM events WHERE rowid IN (SELECT rid FROM _dups)")
    return len(rows)


def load_batch(
    con: duckdb.DuckDBPyConnection,
    batch: pa.Table,
    refused: list[tuple[int, str, str]],
    *,
    ingest_id: int,
    source: str,
) -> Counts:
    """Parse, check and insert one batch; return how its lines were counted.

    ``refused`` are lines already found bad (not UTF-8, not OTLP) as
    ``(line, raw, reason)``; they count as read and rejected.
    """
    counts = Counts(read=len(refused))
    rejects = list(refused)
    lines, inserted, slow = _load(con, batch, ingest_id, source)
    counts.read += lines
    counts.accepted += inserted
    if slow:
        fixed, bad = _decode_slow(slow)
        rejects.extend(bad)
        if fixed.num_rows:
            _, inserted, again = _load(con, fixed, ingest_id, source, trusted=True)
            counts.accepted += inserted
            rejects.extend((line, raw, "not a v1 record") for line, _, raw in again)
    counts.rejected += reject_rows(con, rejects, ingest_id=ingest_id, source=source)
    return counts


def _load(
    con: duckdb.DuckDBPyConnection,
    batch: pa.Table,
    ingest_id: int,
    source: str,
    *,
    trusted: bool = False,
) -> tuple[int, int, list[tuple]]:
    """Insert the batch's plain records; return lines, inserted, and the other lines."""
    con.register("_batch", batch)
    insert = _INSERT_TRUSTED_SQL if trusted else _INSERT_SQL
    try:
        with _no_filter_pushdown(con):
            result = con.execute(insert, {"ingest_id": ingest_id, "source": source})
            row = result.fetchall()[0]
        inserted = int(row[0]) if row else 0
        lines = _filled(batch)
        slow: list[tuple] = []
        if lines is None or inserted < lines:  # odd lines: pay for exact counts and a second parse
            row = con.execute(_LINES_SQL).fetchall()[0]
            lines = int(row[0]) if row else 0
            slow = con.execute(_SLOW_SQL).fetchall() if inserted < lines else []
    finally:
        con.unregister("_batch")
    return lines, inserted, slow


@contextlib.contextmanager
def _no_filter_pushdown(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Keep ``WHERE fast_ok`` above the parse.

    Pushed down, the filter is rewritten in terms of ``from_json(text, ...)``,
    which it then evaluates once for each field it reads: a third of the
    insert's time at 1M events.
    """
    con.execute("SET disabled_optimizers = 'filter_pushdown'")
    try:
        yield
    finally:
        con.execute("RESET disabled_optimizers")


def _filled(batch: pa.Table) -> int | None:
    meta = batch.schema.metadata or {}
    return int(meta[b"filled"]) if b"filled" in meta else None


def _decode_slow(rows: list[tuple]) -> tuple[pa.Table, list[tuple[int, str, str]]]:
    """Decode lines DuckDB refused; return the accepted ones re-encoded, and rejects."""
    lines: list[int] = []
    items: list[int] = []
    texts: list[str] = []
    raws: list[str] = []
    rejects: list[tuple[int, str, str]] = []
    for line, item, raw in rows:
        try:
            event = decode_event(raw)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            rejects.append((line, raw, reject_reason(exc)))  # the words of tracekit tree
            continue
        lines.append(line)
        items.append(item)
        texts.append(encode_event(event).decode())
        raws.append(raw)
    fixed = pa.table(
        {
            "line": pa.array(lines, pa.int64()),
            "item": pa.array(items, pa.int32()),
            "text": pa.array(texts, pa.large_string()),
            "raw": pa.array(raws, pa.large_string()),
        }
    )
    return fixed, rejects


def reject_rows(
    con: duckdb.DuckDBPyConnection,
    rows: list[tuple[int, str, str]],
    *,
    ingest_id: int,
    source: str,
) -> int:
    """Insert ``(line, raw, reason)`` rows into ``rejects``; return how many."""
    if not rows:
        return 0
    table = pa.table(
        {
            "line": pa.array([r[0] for r in rows], pa.int64()),
            "raw": pa.array([r[1] for r in rows], pa.large_string()),
            "reason": pa.array([r[2] for r in rows], pa.large_string()),
        }
    )
    con.register("_rejects", table)
    try:
        con.execute(
            "INSERT INTO rejects SELECT $ingest_id, $source, line, raw, reason FROM _rejects",
            {"ingest_id": ingest_id, "source": source},
        )
    finally:
        con.unregister("_rejects")
    return len(rows)
