"""OTLP JSON sources mapped as columns: the common shapes set-based, the rest per span.

The source's lines are decoded by DuckDB into a spans table
(:mod:`tracekit.intake.otlp.columns.decode`); the traces of a common shape
are mapped in SQL (:mod:`tracekit.intake.otlp.columns.mapping`) into v1 record
text; every other trace is fed, span by span, to the one intake join of the
ingest, which maps it exactly as before. A source with any line DuckDB does
not decode exactly as the per-span decoder would (bad JSON, odd ids, another
spelling) is read the per-span way whole, so bad input is refused as it
always was.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

import duckdb
import numpy as np
import pyarrow as pa

from tracekit.intake.lines import Chunk
from tracekit.intake.otlp.batches import Keep, document_lines
from tracekit.intake.otlp.columns import decode_lines, map_spans
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.store.otlp_source import JoinedOtlp, Tables
from tracekit.store.sources import BATCH_ROWS, ints, text_table

__all__ = ["Mapped", "column_batches", "columns_enabled", "map_span_table"]

#: Set to 0 to read every OTLP span the per-span way (a comparison, a bisection).
ENV: Final = "TRACEKIT_OTLP_COLUMNS"

# The records as the batch table of ``store.sources.text_table`` (line, item, text, raw,
# keys), straight from DuckDB as Arrow: no Python string a record.
_RECORDS_SQL = """
SELECT line::BIGINT AS line,
    (row_number() OVER (PARTITION BY line ORDER BY ts, rank, k3, k4) - 1)::INTEGER AS item,
    text::VARCHAR AS text, text::VARCHAR AS raw, (-1)::INTEGER AS keys
FROM _otlp_records ORDER BY line, ts, rank, k3, k4
"""
_LEFT = "FROM _otlp_spans WHERE trace NOT IN (SELECT trace FROM _otlp_taken)"
_LEFT_SQL = f"SELECT line, list(DISTINCT trace) {_LEFT} GROUP BY line"
# Per line, its spans left to the per-span converter as a document of their
# own text, grouped by resource as written (the decoder reads the service there).
_DOCUMENTS_SQL = f"""
WITH r AS (
    SELECT line, ri, '{{' || CASE WHEN any_value(service) IS NOT NULL THEN
            '"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":'
            || to_json(any_value(service)) || '}}}}]}},' ELSE '' END
        || '"scopeSpans":[{{"spans":[' || string_agg(raw, ',' ORDER BY pos) || ']}}]}}' AS rs
    {_LEFT} GROUP BY line, ri
)
SELECT line, '{{"resourceSpans":[' || string_agg(rs, ',' ORDER BY ri) || ']}}' FROM r GROUP BY line
"""
_TEMP = ("_otlp_spans", "_otlp_roles", "_otlp_taken", "_otlp_records")


def columns_enabled() -> bool:
    """Whether OTLP sources are mapped set-based (``TRACEKIT_OTLP_COLUMNS`` is not ``0``)."""
    return os.environ.get(ENV, "1") != "0"


def column_batches(
    con: duckdb.DuckDBPyConnection,
    joined: JoinedOtlp,
    chunks: Iterable[Chunk],
    origin: int,
    spans: SpanCounts,
) -> Iterator[tuple[Chunk, Tables]]:
    """Each chunk of source ``origin`` with the tables of the traces it completed.

    The set-based records come with the first chunk; ``spans`` is told where
    their spans went (the join counts the rest).
    """
    read = list(document_lines(chunks))
    mapped = _mapped(con, read)
    if mapped is None:
        yield from joined.batches((chunk for chunk, _ in read), origin)
        return
    table, keep, counts = mapped.records, mapped.documents, mapped.counts
    spans.add(counts)
    first = True
    for chunk, tables in joined.batches((chunk for chunk, _ in read), origin, keep):
        if first:
            own, refused = tables.get(origin, (table.slice(0, 0), []))
            tables[origin] = (pa.concat_tables([table, own]), refused)
            first = False
        yield chunk, tables


@dataclass
class Mapped:
    """What the set-based mapping made of a batch of spans."""

    #: The records of the traces it took, as v1 lines (``line``, ``item``, ``text``, ``raw``),
    #: ready for :func:`~tracekit.store.load.load_batch`.
    records: pa.Table
    #: Per line (or position), the traces of it left to the per-span converter.
    left: dict[int, frozenset[str]]
    #: Per line of a JSON source, its spans left to the converter as a document of them.
    documents: Keep
    #: Where the spans it took went (agents and steps).
    counts: SpanCounts


def map_span_table(con: duckdb.DuckDBPyConnection, spans: pa.Table) -> Mapped | None:
    """Map a spans table (:func:`~tracekit.intake.otlp.columns.proto_spans`) set-based.

    The collector's entry: decoded protobuf bodies in, the records of the
    common-shape traces out, and which traces of each position to feed the
    per-span converter (``decode_spans_proto`` filtered by trace). Every
    trace in ``spans`` must be whole (the caller's assembler says so). None
    when a span is not read exactly (a short id, a time out of range): feed
    the whole batch to the per-span converter then.
    """
    con.register("_otlp_given", spans)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _otlp_spans AS SELECT * FROM _otlp_given")
    finally:
        con.unregister("_otlp_given")
    if not con.execute("SELECT coalesce(bool_and(exact), true) FROM _otlp_spans").fetchall()[0][0]:
        con.execute("DROP TABLE _otlp_spans")
        return None
    return _map(con, json=False)


def _mapped(
    con: duckdb.DuckDBPyConnection, read: list[tuple[Chunk, list[tuple[int, bytes]]]]
) -> Mapped | None:
    """The set-based records, the traces left per line, and the spans mapped; None to read per span."""
    lines = [pair for _, pairs in read for pair in pairs]
    try:
        texts = pa.Array.from_buffers(
            pa.large_binary(), len(lines), [None, *_buffers([t for _, t in lines])]
        ).cast(pa.large_string())
    except pa.ArrowInvalid:
        return None  # not UTF-8: the per-span path refuses it line by line
    table = pa.table({"line": ints([n for n, _ in lines], np.int64), "text": texts})
    if not decode_lines(con, table):
        con.execute("DROP TABLE IF EXISTS _otlp_spans")
        return None
    try:
        return _map(con, json=True)
    except duckdb.OutOfMemoryException:
        return None  # past the store's memory cap: the per-span path holds less at once


def _map(con: duckdb.DuckDBPyConnection, *, json: bool) -> Mapped:
    try:
        agents, steps = map_spans(con)
        found = con.sql(_RECORDS_SQL).arrow()  # DuckDB 2 gives a reader, 1.x a table
        records = _batches(found.read_all() if hasattr(found, "read_all") else found)
        left = {line: frozenset(traces) for line, traces in con.execute(_LEFT_SQL).fetchall()}
        documents = (
            {line: text.encode() for line, text in con.execute(_DOCUMENTS_SQL).fetchall()}
            if json
            else {}
        )
    finally:
        for name in _TEMP:
            con.execute(f"DROP TABLE IF EXISTS {name}")
    return Mapped(records, left, documents, SpanCounts(agents=agents, steps=steps))


def _batches(table: pa.Table) -> pa.Table:
    """The schema and record batches of ``text_table`` (large strings, batches DuckDB scans in parallel)."""
    schema = text_table([], [], [], []).schema
    return pa.Table.from_batches(table.cast(schema).to_batches(max_chunksize=BATCH_ROWS), schema)


def _buffers(values: list[bytes]) -> tuple[pa.Buffer, pa.Buffer]:
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return pa.py_buffer(offsets), pa.py_buffer(b"".join(values))
