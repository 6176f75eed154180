"""``tracekit rederive``: the derived tables built again from the stored spans, under today's rules.

Each chosen trace is derived whole from its spans (:mod:`tracekit.store.spans_derive`),
its earlier rows replaced, then the tables are rebuilt and classified as by an
ingest, in one transaction: a store derived again equals a fresh ingest of the
same files. The work is one ``ingest_log`` row (source ``rederive``), under
which the records derived again are stored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from tracekit._util.text import plural
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.derivation import Derived, deriver_version
from tracekit.store.classify import classify_store
from tracekit.store.derive import derive
from tracekit.store.ingest_log import mark_derived, next_ingest_id, record_progress, transaction
from tracekit.store.load import Counts
from tracekit.store.query import parse_since
from tracekit.store.spans_derive import SpansDerived, derive_trace_ids, store_derived

__all__ = [
    "RederiveReport",
    "derive_again",
    "derive_in_hand",
    "rederive",
    "stale_notice",
    "underived_traces",
]

SOURCE = "rederive"
Progress = Callable[[int], None]
ProgressFactory = Callable[[int], contextlib.AbstractContextManager[Progress]]


@dataclass
class RederiveReport:
    """What a rederive did: traces derived again, records stored, runs rebuilt."""

    traces: int = 0
    records: int = 0
    runs_touched: int = 0
    spans: SpanCounts | None = None

    def line(self) -> str:
        """One line for the terminal.

        Example:
            >>> RederiveReport(traces=2, records=9, runs_touched=2).line()
            'derived 2 traces again: 9 records, 2 runs rebuilt'
        """
        return (
            f"derived {plural(self.traces, 'trace')} again: {plural(self.records, 'record')},"
            f" {plural(self.runs_touched, 'run')} rebuilt"
        )


def chosen_traces(
    con: duckdb.DuckDBPyConnection, *, since: str | datetime | None, service: str | None
) -> list[str]:
    """The stored traces with a span that started at or after ``since``, of ``service``."""
    where: list[str] = ["true"]
    params: list[object] = []
    if since is not None:
        cut = parse_since(since) if isinstance(since, str) else since
        if cut.tzinfo is None:
            cut = cut.replace(tzinfo=UTC)
        where.append("start_ns >= ?")
        params.append(int(cut.timestamp() * 1_000_000_000))
    if service is not None:
        where.append("service = ?")
        params.append(service)
    sql = f"SELECT DISTINCT trace_id FROM spans WHERE {' AND '.join(where)} ORDER BY 1"
    return [str(r[0]) for r in con.execute(sql, params).fetchall()]


def rederive(
    con: duckdb.DuckDBPyConnection,
    *,
    since: str | datetime | None = None,
    service: str | None = None,
    progress: ProgressFactory | None = None,
) -> RederiveReport:
    """Derive the chosen traces again from their stored spans, replace their rows, classify.

    Raises:
        StoreError: ``since`` is not a time span or a time.
    """
    traces = chosen_traces(con, since=since, service=service)
    return derive_again(con, traces, source=SOURCE, progress=progress)


def derive_again(
    con: duckdb.DuckDBPyConnection,
    traces: list[str],
    *,
    source: str,
    progress: ProgressFactory | None = None,
) -> RederiveReport:
    """Derive the given traces from their stored spans, replace their rows, classify: one transaction.

    The records are stored under one new ``ingest_log`` row named ``source``
    (``rederive``, or a collector's ``serve:derive``).
    """
    if not traces:
        return RederiveReport()

    def work(ingest_id: int) -> SpansDerived:
        with _bar(progress, len(traces)) as advance:
            return derive_trace_ids(con, traces, since=ingest_id, into=ingest_id, progress=advance)

    return _derived_as(con, source, work)


def derive_in_hand(
    con: duckdb.DuckDBPyConnection, derived: Derived, *, source: str, span_source: str
) -> RederiveReport:
    """Store traces derived from the spans in hand (a collector's), build their tables, classify.

    One transaction, as :func:`derive_again`, whose rows it equals: the
    records under one new ``ingest_log`` row named ``source``, each trace
    stamped. ``span_source``: the source its spans were stored under.
    """
    if not derived.traces:
        return RederiveReport()
    return _derived_as(
        con,
        source,
        lambda ingest_id: store_derived(con, derived, into=ingest_id, source=span_source),
    )


def _derived_as(
    con: duckdb.DuckDBPyConnection, source: str, work: Callable[[int], SpansDerived]
) -> RederiveReport:
    """``work`` stores records under a new ``ingest_log`` row; the tables built on them, classified."""
    report = RederiveReport()
    with transaction(con):
        ingest_id = next_ingest_id(con)
        con.execute(
            "INSERT INTO ingest_log (ingest_id, source, format, started_at)"
            " VALUES (?, ?, 'otlp', ?)",
            [ingest_id, source, _now()],
        )
        done = work(ingest_id)
        counts = Counts()
        for part in done.counts.values():
            counts.add(part)
        record_progress(con, ingest_id, counts)
        report.runs_touched = derive(con, ingest_id)
        classify_store(con, own_transaction=False)
        mark_derived(con, ingest_id)
    report.traces, report.records, report.spans = done.traces, counts.accepted, done.spans
    return report


def underived_traces(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The traces whose stored spans are not all derived (a collector stopped before it derived them)."""
    rows = con.execute(
        "SELECT s.trace_id FROM (SELECT trace_id, sum(spans) AS n FROM span_traces GROUP BY 1) s"
        " LEFT JOIN derivations d ON d.trace_id = s.trace_id"
        " WHERE d.spans IS DISTINCT FROM s.n ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in rows]


def stale_notice(con: duckdb.DuckDBPyConnection) -> str | None:
    """What of the store was derived by other rules than today's, and how to refresh it."""
    rows = con.execute(
        "SELECT deriver, count(*) FROM derivations WHERE deriver <> ? GROUP BY 1 ORDER BY 1",
        [deriver_version()],
    ).fetchall()
    if not rows:
        return None
    stale = sum(int(n) for _, n in rows)
    older = ", ".join(f"{n} by {name}" for name, n in rows)
    return (
        f"{plural(stale, 'trace')} of this store were derived by other rules ({older});"
        f" this is {deriver_version()}: run tracekit rederive to derive them again"
    )


def _bar(
    progress: ProgressFactory | None, total: int
) -> contextlib.AbstractContextManager[Progress]:
    if progress is None:
        return contextlib.nullcontext(lambda _n: None)
    return progress(total)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
