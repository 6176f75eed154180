"""Records from stored spans: each trace derived whole, its earlier rows replaced.

A trace is derived from every span the store holds of it (whichever file,
request or restart brought them), by the one processor
(:func:`tracekit.intake.otlp.derivation.derive_traces`). Its records go to
``events`` marked with the trace (``span_trace``), the spans the rules refuse
to ``rejects``, and ``derivations`` says which rules derived it. Deriving a
trace again first removes what it derived before (records, refusals, and the
invocations, steps, runs and closure rows built on them), so a trace that
gains a span, or that is derived again under new rules, is never doubled;
:func:`tracekit.store.derive.derive` then rebuilds the tables from the
records, as for any ingest.

A fresh ingest derives the spans it has in hand as it reads them
(:class:`InHand`, fed by :class:`~tracekit.intake.otlp.derivation.SpanDeriver`):
the same mapping of the same spans, without reading them back. Only the
traces that had spans stored before, gained a span once derived, or share a
span link are derived from their stored spans, at the ingest's end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import duckdb
import numpy as np
import pyarrow as pa

from tracekit._util.arrow import ints, strings
from tracekit._util.gcpause import gc_paused
from tracekit._util.sql import run_script
from tracekit.events import Event
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.derivation import (
    ROW_COLUMNS,
    Derived,
    SpanDeriver,
    derive_rows,
    deriver_version,
)
from tracekit.store.load import Counts, load_records, reject_rows

__all__ = [
    "InHand",
    "SpansDerived",
    "derive_spans",
    "derive_trace_ids",
    "finish_in_hand",
    "store_derived",
    "store_in_hand",
    "touched_traces",
]

#: Traces derived together (with every trace their links join them to).
BATCH_TRACES: Final = 2000

# The rows a trace derived before, and all built on them, removed before it
# is derived again (``_traces``: the traces of the batch).
_FORGET: Final = """
CREATE OR REPLACE TEMP TABLE _gone AS
SELECT type, run_id, invocation_id, node, ts_ms, seq FROM events
WHERE span_trace IN (SELECT trace_id FROM _traces);

CREATE OR REPLACE TEMP TABLE _gone_runs AS
SELECT i.root_run_id AS run_id FROM invocations i SEMI JOIN _gone g
    ON i.run_id = g.run_id AND i.invocation_id = g.invocation_id
WHERE i.root_run_id IS NOT NULL
UNION SELECT run_id FROM _gone WHERE type IN ('run.start', 'run.end', 'node')
UNION SELECT i.root_run_id FROM invocations i
    SEMI JOIN (SELECT run_id FROM _gone WHERE type = 'node') n ON n.run_id = i.run_id
WHERE i.root_run_id IS NOT NULL;

DELETE FROM closure WHERE descendant IN (SELECT run_id FROM _gone WHERE type IN ('enter', 'exit'));

DELETE FROM invocations WHERE rowid IN (
    SELECT i.rowid FROM invocations i SEMI JOIN _gone g
        ON i.run_id = g.run_id AND i.invocation_id = g.invocation_id
);

DELETE FROM steps WHERE rowid IN (
    SELECT s.rowid FROM steps s SEMI JOIN (SELECT * FROM _gone WHERE type = 'node') g
        ON s.run_id = g.run_id AND s.step_id = g.node AND s.ts_ms = g.ts_ms
        AND s.seq IS NOT DISTINCT FROM g.seq
);

DELETE FROM runs WHERE run_id IN (SELECT run_id FROM _gone_runs);
DELETE FROM events WHERE span_trace IN (SELECT trace_id FROM _traces);
DELETE FROM rejects WHERE span_trace IN (SELECT trace_id FROM _traces);
DELETE FROM derivations WHERE trace_id IN (SELECT trace_id FROM _traces);
DROP TABLE _gone;
DROP TABLE _gone_runs;
"""

# The loads that stored spans of the batch's traces (the directory).
_LOADS: Final = (
    "SELECT DISTINCT ingest_id FROM span_traces WHERE trace_id IN (SELECT trace_id FROM _traces)"
)

# Their spans, from the row groups of those loads only (``{ingests}``: whole
# numbers, written in so that the zone maps of ``ingest_id`` skip the rest).
_ROWS: Final = f"""
SELECT {", ".join(f"s.{c}" for c in ROW_COLUMNS)}
FROM spans s SEMI JOIN _traces t ON s.trace_id = t.trace_id
WHERE s.ingest_id IN ({{ingests}})
ORDER BY s.ingest_id, s.line, s.pos
"""

_STAMP: Final = """
INSERT INTO derivations (trace_id, deriver, spans, derived_at, dialects)
SELECT trace_id, $deriver, sum(spans), $now, $dialects FROM span_traces
WHERE trace_id IN (SELECT trace_id FROM _traces) GROUP BY trace_id
"""

_STAMP_GIVEN: Final = """
INSERT INTO derivations (trace_id, deriver, spans, derived_at, dialects)
SELECT trace_id, $deriver, spans, $now, $dialects FROM _stamps
"""

# The traces of a batch that have spans or derived rows from before the ingest.
_EARLIER: Final = """
SELECT d.trace_id FROM span_traces d SEMI JOIN _traces t ON d.trace_id = t.trace_id
WHERE d.ingest_id < $first
UNION SELECT e.span_trace FROM events e SEMI JOIN _traces t ON e.span_trace = t.trace_id
WHERE e.ingest_id < $first
"""

_LINKED: Final = """
SELECT DISTINCT t.trace_id FROM _traces t
SEMI JOIN (SELECT unnest(linked) AS trace_id FROM spans WHERE linked IS NOT NULL) l
    ON l.trace_id = t.trace_id
"""

Progress = Callable[[int], None]


@dataclass
class InHand:
    """A fresh ingest's traces derived from the spans in hand, stored batch by batch.

    ``first`` is the ingest's first ``ingest_log`` row; ``before`` whether the
    store held spans before it (then a trace with older spans is derived from
    the store instead).
    """

    deriver: SpanDeriver
    first: int
    before: bool
    sources: dict[int, str] = field(default_factory=dict)
    spans: SpanCounts = field(default_factory=SpanCounts)
    #: What each standing batch stored: counts by ingest, and where its spans went.
    stored: dict[int, tuple[dict[int, Counts], SpanCounts]] = field(default_factory=dict)

    @classmethod
    def open(cls, con: duckdb.DuckDBPyConnection, first: int) -> InHand:
        """A new ingest's, starting at ingest ``first``."""
        row = con.execute(
            "SELECT EXISTS (SELECT 1 FROM spans)"
            " OR EXISTS (SELECT 1 FROM events WHERE span_trace IS NOT NULL)"
        ).fetchall()
        return cls(SpanDeriver(), first, bool(row and row[0][0]))

    def start(self, ingest: int, source: str) -> None:
        """The spans fed next were read by this ingest, from this source."""
        self.sources[ingest] = source
        self.deriver.start(ingest)


@dataclass
class SpansDerived:
    """What deriving spans gave: counts by ingest (records as lines), where the spans went."""

    counts: dict[int, Counts] = field(default_factory=dict)
    spans: SpanCounts = field(default_factory=SpanCounts)
    traces: int = 0


def store_in_hand(
    con: duckdb.DuckDBPyConnection, hand: InHand, derived: Derived
) -> dict[int, Counts]:
    """Store a batch derived in hand (in the caller's transaction); counts by ingest.

    The counts include those taken back from batches dropped since (a trace of
    theirs turned late: the store derives it at the end, replacing their rows).
    """
    if derived.traces and hand.before:
        earlier = _select(con, derived.traces, _EARLIER, {"first": hand.first})
        if earlier:
            hand.deriver.void(*earlier)
    counts: dict[int, Counts] = {}
    if derived.traces and derived.number not in hand.deriver.dropped:
        for (ingest, source), (records, refused) in _grouped(derived, 0, 0, hand.sources).items():
            counts.setdefault(ingest, Counts()).add(_store(con, records, refused, ingest, source))
        hand.stored[derived.number] = (dict(counts), derived.counts)
        hand.spans.add(derived.counts)
    for number in hand.deriver.dropped:
        by_ingest, spans = hand.stored.pop(number, ({}, SpanCounts()))
        hand.spans.add(spans, -1)
        for ingest, taken in by_ingest.items():
            counts.setdefault(ingest, Counts()).add(_negative(taken))
    hand.deriver.dropped.clear()
    return counts


def finish_in_hand(con: duckdb.DuckDBPyConnection, hand: InHand) -> dict[int, Counts]:
    """The traces still held derived and stored; links from older spans voided; the rest stamped.

    Returns the counts by ingest, as :func:`store_in_hand`.
    """
    counts = store_in_hand(con, hand, hand.deriver.finish())
    given = hand.deriver.given()
    if given and hand.before:
        linked = _select(con, given, _LINKED, {})
        if linked:
            hand.deriver.void(*linked)
            for ingest, more in store_in_hand(con, hand, Derived()).items():
                counts.setdefault(ingest, Counts()).add(more)
            given = hand.deriver.given()
    if given:
        now = datetime.now(UTC).replace(tzinfo=None)
        params = {"deriver": deriver_version(), "now": now, "dialects": _dialect_files()}
        _with_traces(con, given, lambda: _run(con, _STAMP, params))
    return counts


def _select(
    con: duckdb.DuckDBPyConnection, traces: list[str], sql: str, params: dict[str, object]
) -> list[str]:
    found: list[str] = []
    _with_traces(
        con, traces, lambda: found.extend(str(r[0]) for r in con.execute(sql, params).fetchall())
    )
    return found


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> None:
    con.execute(sql, params)


def _negative(counts: Counts) -> Counts:
    return Counts(-counts.read, -counts.accepted, -counts.rejected, -counts.duplicates)


def touched_traces(con: duckdb.DuckDBPyConnection, since: int) -> list[str]:
    """The traces that gained a span in an ingest ``>= since``."""
    rows = con.execute(
        "SELECT DISTINCT trace_id FROM spans WHERE ingest_id >= ? ORDER BY 1", [since]
    ).fetchall()
    return [str(r[0]) for r in rows]


def derive_spans(
    con: duckdb.DuckDBPyConnection,
    since: int,
    *,
    progress: Progress | None = None,
    derived: Iterable[str] = (),
) -> SpansDerived:
    """Derive every trace that gained a span in an ingest ``>= since`` (in the caller's transaction).

    Records of spans read by those ingests are stored under them; a trace's
    older spans derive under the newest of them, so ``derive(con, since)``
    rebuilds everything they touch. ``derived``: traces already derived in
    hand (:func:`finish_in_hand`), left as they are.
    """
    traces = touched_traces(con, since)
    done = set(derived)
    if done:
        traces = [t for t in traces if t not in done]
    if not traces:
        return SpansDerived()
    row = con.execute("SELECT max(ingest_id) FROM spans WHERE ingest_id >= ?", [since]).fetchall()[
        0
    ]
    fallback = int(row[0]) if row and row[0] is not None else since
    return derive_trace_ids(con, traces, since=since, into=fallback, progress=progress)


def derive_trace_ids(
    con: duckdb.DuckDBPyConnection,
    traces: list[str],
    *,
    since: int,
    into: int,
    progress: Progress | None = None,
) -> SpansDerived:
    """Derive the given traces again from their stored spans, replacing what they derived.

    A record whose span was read by an ingest ``>= since`` is stored under
    that ingest, any other under ``into`` (an ingest ``>= since``).
    """
    done = SpansDerived()
    sources = _sources(con)
    deriver = deriver_version()
    for batch in _batches(_components(con, traces)):
        with gc_paused():  # a batch's spans and records hold no cycles
            _with_traces(
                con, batch, lambda: _derive_batch(con, since, into, sources, deriver, done)
            )
        done.traces += len(batch)
        if progress is not None:
            progress(len(batch))
    return done


def _derive_batch(
    con: duckdb.DuckDBPyConnection,
    since: int,
    into: int,
    sources: dict[int, str],
    deriver: str,
    done: SpansDerived,
) -> None:
    loads = [int(r[0]) for r in con.execute(_LOADS).fetchall()] or [-1]
    derived = derive_rows(con.execute(_ROWS.format(ingests=", ".join(map(str, loads)))).fetchall())
    if _derived_before(con):
        run_script(con, _FORGET)
    done.spans.add(derived.counts)
    for (ingest, source), (records, refused) in _grouped(derived, since, into, sources).items():
        counts = _store(con, records, refused, ingest, source)
        done.counts.setdefault(ingest, Counts()).add(counts)
    now = datetime.now(UTC).replace(tzinfo=None)
    con.execute(_STAMP, {"deriver": deriver, "now": now, "dialects": _dialect_files()})


def store_derived(
    con: duckdb.DuckDBPyConnection, derived: Derived, *, into: int, source: str
) -> SpansDerived:
    """Store traces a collector derived in hand (in the caller's transaction), and stamp them.

    The traces have no rows from before (the collector derives a trace in
    hand only while the store holds no span of it it did not see); each
    record goes under ingest ``into``, as :func:`derive_trace_ids` would put
    it, and each trace is stamped with the spans it was derived from.
    """
    done = SpansDerived(traces=len(derived.traces))
    done.spans.add(derived.counts)
    sources = {ingest: source for ingest, _, _ in derived.records}
    sources.update((ingest, source) for ingest, *_ in derived.refused)
    for (ingest, name), (records, refused) in _grouped(derived, into, into, sources).items():
        done.counts.setdefault(ingest, Counts()).add(_store(con, records, refused, ingest, name))
    if derived.sizes:
        stamps = pa.table(
            {
                "trace_id": strings(list(derived.sizes)),
                "spans": ints(derived.sizes.values(), np.int64),
            }
        )
        now = datetime.now(UTC).replace(tzinfo=None)
        params = {"deriver": deriver_version(), "now": now, "dialects": _dialect_files()}
        con.register("_stamps", stamps)
        try:
            con.execute(_STAMP_GIVEN, params)
        finally:
            con.unregister("_stamps")
    return done


_Group = tuple[list[tuple[int, int, Event]], list[tuple[int, str, str, str]]]


def _grouped(
    derived: Derived, since: int, into: int, sources: dict[int, str]
) -> dict[tuple[int, str], _Group]:
    """Records and refusals by the ingest they are stored under and their span's source.

    Each record is numbered (``item``) among those of its line and trace, so a
    trace's rows do not depend on which traces were derived with it.
    """
    groups: dict[tuple[int, str], _Group] = {}
    items: dict[tuple[str, int, str], int] = {}
    for ingest, line, event in derived.records:
        source = sources.get(ingest, "?")
        trace = event.traceId or ""
        place = (source, line, trace)
        item = items.get(place, 0)
        items[place] = item + 1
        group = groups.setdefault((ingest if ingest >= since else into, source), ([], []))
        group[0].append((line, item, event))
    for ingest, line, text, reason, trace in derived.refused:
        source = sources.get(ingest, "?")
        group = groups.setdefault((ingest if ingest >= since else into, source), ([], []))
        group[1].append((line, text, reason, trace))
    return groups


def _store(
    con: duckdb.DuckDBPyConnection,
    records: list[tuple[int, int, Event]],
    refused: list[tuple[int, str, str, str]],
    ingest: int,
    source: str,
) -> Counts:
    counts = load_records(con, records, ingest_id=ingest, source=source)
    con.execute(
        "UPDATE events SET span_trace = coalesce(trace_id, '')"
        " WHERE ingest_id = ? AND span_trace IS NULL",
        [ingest],
    )
    if refused:
        rows = [(line, text, reason) for line, text, reason, _ in refused]
        added = reject_rows(
            con, rows, ingest_id=ingest, source=source, traces=[r[3] for r in refused]
        )
        counts.read += added
        counts.rejected += added
    return counts


def _dialect_files() -> str | None:
    """The user's dialects in force, by the file each came from (None: none)."""
    from tracekit.intake.otlp.dialects import user_dialects

    return ", ".join(d.origin or d.name for d in user_dialects()) or None


def _derived_before(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any trace of the batch has rows to replace (a first ingest of new traces has none)."""
    # ``derivations`` first (small, and a trace derived has its row there); the
    # records of a store made before v9 have none.
    for sql in (
        "SELECT EXISTS (SELECT 1 FROM derivations WHERE trace_id IN (SELECT trace_id FROM _traces))",
        "SELECT EXISTS (SELECT 1 FROM events WHERE span_trace IN (SELECT trace_id FROM _traces))",
    ):
        row = con.execute(sql).fetchall()
        if row and row[0][0]:
            return True
    return False


def _sources(con: duckdb.DuckDBPyConnection) -> dict[int, str]:
    # A load's spans carry its ingest_log row's source: the small table is read.
    rows = con.execute("SELECT ingest_id, source FROM ingest_log").fetchall()
    return {int(i): str(s) for i, s in rows}


def _with_traces(
    con: duckdb.DuckDBPyConnection, traces: list[str], work: Callable[[], None]
) -> None:
    table = pa.table({"trace_id": strings(traces)})  # pa.array would import pandas
    con.register("_trace_list", table)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _traces AS SELECT trace_id FROM _trace_list")
    finally:
        con.unregister("_trace_list")
    try:
        work()
    finally:
        con.execute("DROP TABLE IF EXISTS _traces")


def _components(con: duckdb.DuckDBPyConnection, traces: list[str]) -> list[list[str]]:
    """The traces with every trace their span links join them to, one group each.

    Links are rare: the pairs of the whole store are read and joined here.
    """
    pairs = con.execute(
        "SELECT trace_id, unnest(linked) FROM spans WHERE linked IS NOT NULL"
    ).fetchall()
    if not pairs:
        return [[t] for t in traces]
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(str(a)), find(str(b))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[str, set[str]] = {}
    for node in {*parent, *parent.values()}:
        members.setdefault(find(node), set()).add(node)
    groups: dict[str, set[str]] = {}
    for trace in traces:
        root = find(trace)
        groups.setdefault(root, {trace}).update(members.get(root, ()))
    return [sorted(g) for _, g in sorted(groups.items())]


def _batches(groups: Iterable[list[str]]) -> Iterator[list[str]]:
    batch: list[str] = []
    for group in groups:
        batch.extend(group)
        if len(batch) >= BATCH_TRACES:
            yield batch
            batch = []
    if batch:
        yield batch
