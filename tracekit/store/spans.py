"""The ``spans`` table: every span as received, once per (trace_id, span_id).

The store takes span batches as Arrow tables of
:data:`~tracekit.intake.otlp.received.SPAN_FIELDS` (the intake decodes the
wire formats) and keeps them as they are; a span already stored, or earlier
in the same batch, is a duplicate: counted, not stored. What the spans mean
is derived from them afterwards (:mod:`tracekit.store.spans_derive`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import duckdb
import numpy as np
import pyarrow as pa

from tracekit._util.arrow import ints, strings

__all__ = ["SpanLoad", "linked_traces", "load_spans", "store_spans", "trace_refusals"]

_COLUMNS: Final = (
    "trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, status_code,"
    " status_message, service, attributes, events, links, linked, resource, scope, extra,"
    " line, pos"
)

# The loads that stored spans of the batch's traces, read in the directory
# (a row per trace per load, a small fraction of ``spans``).
_PRIOR: Final = """
SELECT DISTINCT d.trace_id, d.ingest_id FROM span_traces d
SEMI JOIN (SELECT DISTINCT trace_id FROM _span_batch) b ON d.trace_id = b.trace_id
"""

# The stored spans of the batch's traces, from the row groups of those loads
# only (the ids are whole numbers, written into the statement so that the
# zone maps of ``ingest_id`` skip the rest).
_HELD: Final = """
CREATE OR REPLACE TEMP TABLE _span_held AS
SELECT s.trace_id, s.span_id FROM spans s
SEMI JOIN (SELECT DISTINCT trace_id FROM _span_batch) b ON s.trace_id = b.trace_id
WHERE s.ingest_id IN ({ingests})
"""

# The first of a key read in the batch wins.
_INSERT: Final = f"""
INSERT INTO spans ({_COLUMNS}, ingest_id, source)
SELECT {_COLUMNS}, $ingest_id, $source FROM _span_batch b
WHERE NOT EXISTS (
    SELECT 1 FROM _span_held s WHERE s.trace_id = b.trace_id AND s.span_id = b.span_id
)
QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY line, pos) = 1
RETURNING trace_id
"""

_DIRECTORY: Final = "INSERT INTO span_traces SELECT trace_id, $ingest_id, spans FROM _span_counts"


@dataclass
class SpanLoad:
    """How the spans of a batch were taken: stored, or duplicates not stored."""

    stored: int = 0
    duplicates: int = 0
    #: The traces that gained a span, when some of the batch were duplicates
    #: (None: every trace of the batch did).
    gained: list[str] | None = None
    #: The traces of the batch that had spans stored before it.
    prior: list[str] = field(default_factory=list)
    #: The ``ingest_log`` row it was stored under.
    ingest_id: int = 0


def load_spans(
    con: duckdb.DuckDBPyConnection, batch: pa.Table, *, ingest_id: int, source: str
) -> SpanLoad:
    """Store a batch of received spans (in the caller's transaction); count its duplicates."""
    if not batch.num_rows:
        return SpanLoad()
    con.register("_span_batch", batch)
    try:
        prior = con.execute(_PRIOR).fetchall()
        ingests = sorted({int(i) for _, i in prior}) or [-1]
        con.execute(_HELD.format(ingests=", ".join(map(str, ingests))))
        taken = con.execute(_INSERT, {"ingest_id": ingest_id, "source": source}).fetchall()
        con.execute("DROP TABLE _span_held")
    finally:
        con.unregister("_span_batch")
    counts = Counter(str(r[0]) for r in taken)
    _directory(con, counts, ingest_id)
    load = SpanLoad(stored=len(taken), duplicates=batch.num_rows - len(taken))
    load.prior = sorted({str(t) for t, _ in prior})
    load.ingest_id = ingest_id
    if load.duplicates:
        load.gained = list(counts)
    return load


def _directory(con: duckdb.DuckDBPyConnection, counts: Counter[str], ingest_id: int) -> None:
    """One ``span_traces`` row for each trace the load stored spans of."""
    if not counts:
        return
    table = pa.table({"trace_id": strings(list(counts)), "spans": ints(counts.values(), np.int64)})
    con.register("_span_counts", table)
    try:
        con.execute(_DIRECTORY, {"ingest_id": ingest_id})
    finally:
        con.unregister("_span_counts")


def linked_traces(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The traces a stored span's link names (links are rare: the whole store is read)."""
    rows = con.execute(
        "SELECT DISTINCT unnest(linked) FROM spans WHERE linked IS NOT NULL"
    ).fetchall()
    return [str(r[0]) for r in rows]


def trace_refusals(con: duckdb.DuckDBPyConnection, traces: list[str]) -> int:
    """How many spans of these traces their derivation refused (kept in ``rejects``).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE rejects (span_trace VARCHAR)")
        >>> _ = con.execute("INSERT INTO rejects VALUES ('a'), ('a'), ('b'), (NULL)")
        >>> trace_refusals(con, ["a", "c"])
        2
    """

    if not traces:
        return 0
    con.register("_refusal_traces", pa.table({"trace_id": strings(traces)}))
    try:
        row = con.execute(
            "SELECT count(*) FROM rejects SEMI JOIN _refusal_traces t ON span_trace = t.trace_id"
        ).fetchall()
    finally:
        con.unregister("_refusal_traces")
    return int(row[0][0]) if row else 0


def store_spans(
    con: duckdb.DuckDBPyConnection,
    batch: pa.Table,
    *,
    source: str,
    refused: list[tuple[int, str, str]],
) -> SpanLoad:
    """Store a batch (a collector's cycle) in one transaction, as one finished ``ingest_log`` row.

    The row counts spans (``lines_read = accepted + rejected + duplicates``);
    ``refused`` (``(line, raw, reason)``, spans refused at the request) go to
    ``rejects``. The traces are derived apart, once they settle.
    """
    from tracekit.store.ingest_log import next_ingest_id, transaction
    from tracekit.store.load import reject_rows

    with transaction(con):
        ingest_id = next_ingest_id(con)
        taken = load_spans(con, batch, ingest_id=ingest_id, source=source)
        bad = reject_rows(con, refused, ingest_id=ingest_id, source=source)
        now = datetime.now(UTC).replace(tzinfo=None)
        con.execute(
            "INSERT INTO ingest_log (ingest_id, source, format, lines_read, accepted, rejected,"
            " duplicates, started_at, finished_at) VALUES (?, ?, 'otlp', ?, ?, ?, ?, ?, ?)",
            [
                ingest_id,
                source,
                batch.num_rows + bad,
                taken.stored,
                bad,
                taken.duplicates,
                now,
                now,
            ],
        )
    return taken
