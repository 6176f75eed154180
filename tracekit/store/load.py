"""Loading one batch of lines into ``events`` and ``rejects``.

DuckDB parses and checks the batch (:mod:`tracekit.store.parse_sql`); the few
lines it does not accept are decoded by msgspec in Python, which either
accepts them (and their normalized JSON takes the fast path) or says why not.
Duplicates (by ``event_key``) within the batch and against the store are
counted and not inserted: the first one read wins.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import msgspec
import pyarrow as pa

from tracekit.events import decode_event, encode_event
from tracekit.store.parse_sql import EVENT_COLUMNS, PARSE_SQL

__all__ = ["Counts", "load_batch", "reject_rows"]


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

# Duplicates, found by key_hash first (a scan of one integer column), then
# confirmed on the whole key: a line already in the store, or an earlier line
# of this batch with the same key.
_DUPLICATES_SQL = """
CREATE OR REPLACE TEMP TABLE _dups AS
WITH h AS (
    SELECT key_hash FROM _parsed WHERE fast_ok GROUP BY key_hash HAVING count(*) > 1
    UNION
    SELECT DISTINCT key_hash FROM events
    WHERE key_hash IN (SELECT key_hash FROM _parsed WHERE fast_ok)
), c AS (
    SELECT line, item, event_key FROM _parsed
    WHERE fast_ok AND key_hash IN (SELECT key_hash FROM h)
)
SELECT line, item FROM c
WHERE event_key IN (
    SELECT event_key FROM events WHERE key_hash IN (SELECT key_hash FROM h)
) OR EXISTS (
    SELECT 1 FROM c AS earlier
    WHERE earlier.event_key = c.event_key
      AND (earlier.line < c.line OR (earlier.line = c.line AND earlier.item < c.item))
)
"""

_INSERT_SQL = f"""
INSERT INTO events ({_COLUMNS})
SELECT {_SELECT} FROM _parsed p
WHERE fast_ok AND NOT EXISTS (
    SELECT 1 FROM _dups d WHERE d.line = p.line AND d.item = p.item
)
"""


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
    slow = _parse(con, batch, counts)
    counts.accepted += _insert(con, ingest_id, source)
    if slow:
        fixed, bad = _decode_slow(slow)
        rejects.extend(bad)
        if fixed.num_rows:
            again = _parse(con, fixed, Counts())
            rejects.extend((line, raw, "not a v1 record") for line, _, raw in again)
            counts.accepted += _insert(con, ingest_id, source)
    counts.rejected += reject_rows(con, rejects, ingest_id=ingest_id, source=source)
    counts.duplicates = counts.read - counts.accepted - counts.rejected
    return counts


def _parse(con: duckdb.DuckDBPyConnection, batch: pa.Table, counts: Counts) -> list[tuple]:
    con.register("_batch", batch)
    try:
        con.execute(PARSE_SQL)
    finally:
        con.unregister("_batch")
    row = con.execute("SELECT count(*) FROM _parsed").fetchone()
    counts.read += int(row[0]) if row else 0
    return con.execute(
        "SELECT line, item, raw FROM _parsed WHERE NOT fast_ok ORDER BY line, item"
    ).fetchall()


def _insert(con: duckdb.DuckDBPyConnection, ingest_id: int, source: str) -> int:
    con.execute(_DUPLICATES_SQL)
    row = con.execute(_INSERT_SQL, {"ingest_id": ingest_id, "source": source}).fetchone()
    return int(row[0]) if row else 0


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
        except msgspec.ValidationError as exc:
            rejects.append((line, raw, f"not a v1 record: {exc}"))
            continue
        except msgspec.DecodeError as exc:
            rejects.append((line, raw, f"not JSON: {exc}"))
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
