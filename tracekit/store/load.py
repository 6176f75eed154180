"""Loading one batch of lines into ``events`` and ``rejects``.

DuckDB parses and checks the batch (:mod:`tracekit.store.record_sql`); the few
lines it does not accept are decoded by msgspec in Python, which either
accepts them (and their normalized JSON takes the fast path) or says why not.
Duplicates (by ``event_key``) within the batch and against the store are
counted and not inserted: the first one read wins.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import msgspec
import numpy as np
import pyarrow as pa

from tracekit.events import Event, decode_event, encode_event
from tracekit.store.event_columns import COLUMNS as RECORD_COLUMNS
from tracekit.store.event_columns import event_columns
from tracekit.store.record_sql import EVENT_COLUMNS, EVENT_KEY_SQL, PARSE_SQL, TRUSTED_PARSE_SQL
from tracekit.store.sources import ints, strings, text_table
from tracekit.validate import reject_reason

__all__ = ["Counts", "load_batch", "load_records", "reject_rows"]


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

# A batch is parsed once into ``_parsed``; lines that msgspec accepts on the
# slow path are parsed again into it (trusted: they passed the one validation),
# so one insert sees every record of the batch in line order.
_PARSE_SQL = f"CREATE OR REPLACE TEMP TABLE _parsed AS SELECT * FROM ({PARSE_SQL})"
_REPARSE_SQL = f"INSERT INTO _parsed SELECT * FROM ({TRUSTED_PARSE_SQL})"
# Typed records (:mod:`tracekit.store.event_columns`) take the place of a parsed batch:
# a view over their Arrow table, nothing to copy.
_RECORDS_SQL = f"""
CREATE OR REPLACE TEMP VIEW _parsed AS
SELECT *, hash(event_key) AS key_hash FROM (
    SELECT line, item, raw, true AS fast_ok, {", ".join(name for name, _ in RECORD_COLUMNS)},
        {EVENT_KEY_SQL} AS event_key
    FROM _records
)
"""
_TALLY_SQL = "SELECT count(*), count(*) FILTER (WHERE fast_ok) FROM _parsed"
_SLOW_SQL = "SELECT line, item, raw FROM _parsed WHERE NOT fast_ok ORDER BY line, item"

# Duplicates are never inserted. Keys that may clash (a hash stored already,
# or seen twice in the batch) are found on key_hash alone: the batch's hashes
# are the small build side of the join, the store's key_hash column is only
# scanned. Records of other hashes are inserted as they are; the few that may
# clash are confirmed on the whole key, and the first one read wins.
_CLASH_SQL = """
CREATE OR REPLACE TEMP TABLE _stored AS
SELECT key_hash, event_key FROM events
WHERE key_hash IN (SELECT key_hash FROM _parsed WHERE fast_ok);

CREATE OR REPLACE TEMP TABLE _clash AS
SELECT key_hash FROM _stored
UNION SELECT key_hash FROM _parsed WHERE fast_ok GROUP BY key_hash HAVING count(*) > 1
"""
_INSERT_SQL = f"""
INSERT INTO events ({_COLUMNS})
SELECT {_SELECT} FROM _parsed
WHERE fast_ok AND key_hash NOT IN (SELECT key_hash FROM _clash)
"""
_INSERT_CLASHING_SQL = f"""
INSERT INTO events ({_COLUMNS})
SELECT {_SELECT} FROM _parsed p
WHERE fast_ok AND key_hash IN (SELECT key_hash FROM _clash)
    AND NOT EXISTS (
        SELECT 1 FROM _stored s WHERE s.key_hash = p.key_hash AND s.event_key = p.event_key
    )
QUALIFY row_number() OVER (PARTITION BY event_key ORDER BY line, item) = 1
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
    ``(line, raw, reason)``; they count as read and rejected. A record already
    stored, or read earlier in the batch, is counted as a duplicate and not
    inserted.
    """
    counts = Counts(read=len(refused))
    rejects = list(refused)
    try:
        _parse(con, batch, _PARSE_SQL)
        counts.read += _tally(con)[0]
        slow = con.execute(_SLOW_SQL).fetchall()
        if slow:
            fixed, bad = _decode_slow(slow)
            rejects.extend(bad)
            if fixed.num_rows:
                con.execute("DELETE FROM _parsed WHERE NOT fast_ok")
                _parse(con, fixed, _REPARSE_SQL)
                again = con.execute(_SLOW_SQL).fetchall()
                rejects.extend((line, raw, "not a v1 record") for line, _, raw in again)
        records = _tally(con)[1]
        counts.accepted += _insert(con, ingest_id, source)
        counts.duplicates += records - counts.accepted
    finally:
        for table in ("_parsed", "_stored", "_clash"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    counts.rejected += reject_rows(con, rejects, ingest_id=ingest_id, source=source)
    return counts


def load_records(
    con: duckdb.DuckDBPyConnection,
    records: list[tuple[int, int, Event]],
    *,
    ingest_id: int,
    source: str,
) -> Counts:
    """Insert typed records ``(line, item, record)`` as :func:`load_batch` would their text.

    Each counts as a line read; a record already stored, or earlier in the
    batch, is a duplicate; one whose text a line could not be is rejected.
    """
    table, refused = event_columns(records)
    counts = Counts(read=len(records))
    con.register("_records", table)
    try:
        con.execute(_RECORDS_SQL)
        counts.accepted = _insert(con, ingest_id, source)
        counts.duplicates = table.num_rows - counts.accepted
    finally:
        con.execute("DROP VIEW IF EXISTS _parsed")
        for name in ("_stored", "_clash"):
            con.execute(f"DROP TABLE IF EXISTS {name}")
        con.unregister("_records")
    bad = [(line, text, reason) for line, _, text, reason in refused]
    counts.rejected = reject_rows(con, bad, ingest_id=ingest_id, source=source)
    return counts


def _insert(con: duckdb.DuckDBPyConnection, ingest_id: int, source: str) -> int:
    """Insert the parsed records not stored yet; return how many."""
    for statement in _CLASH_SQL.split(";"):
        con.execute(statement)
    params = {"ingest_id": ingest_id, "source": source}
    inserted = 0
    clashes = con.execute("SELECT count(*) FROM _clash").fetchall()[0][0]
    for sql in (_INSERT_SQL, _INSERT_CLASHING_SQL) if clashes else (_INSERT_SQL,):
        row = con.execute(sql, params).fetchall()
        inserted += int(row[0][0]) if row else 0
    return inserted


def _parse(con: duckdb.DuckDBPyConnection, batch: pa.Table, sql: str) -> None:
    con.register("_batch", batch)
    try:
        con.execute(sql)
    finally:
        con.unregister("_batch")


def _tally(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """Lines parsed, and how many of them are records."""
    row = con.execute(_TALLY_SQL).fetchall()[0]
    return int(row[0]), int(row[1] or 0)


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
    return text_table(lines, items, texts, raws), rejects


def reject_rows(
    con: duckdb.DuckDBPyConnection,
    rows: list[tuple[int, str, str]],
    *,
    ingest_id: int,
    source: str,
    traces: list[str] | None = None,
) -> int:
    """Insert ``(line, raw, reason)`` rows into ``rejects``; return how many.

    ``traces``: for spans the rules refused, the trace each was derived
    from (its refusal is replaced when the trace is derived again).
    """
    if not rows:
        return 0
    table = pa.Table.from_arrays(
        [
            ints([r[0] for r in rows], np.int64),
            strings([r[1] for r in rows]),
            strings([r[2] for r in rows]),
            pa.array(traces if traces is not None else [None] * len(rows), pa.string()),
        ],
        names=["line", "raw", "reason", "span_trace"],
    )
    con.register("_rejects", table)
    try:
        con.execute(
            "INSERT INTO rejects (ingest_id, source, line, raw, reason, span_trace)"
            " SELECT $ingest_id, $source, line, raw, reason, span_trace FROM _rejects",
            {"ingest_id": ingest_id, "source": source},
        )
    finally:
        con.unregister("_rejects")
    return len(rows)
