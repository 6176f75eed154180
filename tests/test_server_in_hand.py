"""``tracekit serve`` derives the spans it has just stored in hand, and the store derives the rest.

The loader feeds each load's spans to one :class:`SpanDeriver`; a trace is
derived from the spans in hand once it settles, without reading ``spans``
back. Its rows must be the rows the store's own road (``derive_traces``, from
the stored spans) gives, table by table; a span that comes after its trace
was derived in hand goes to the store's road, which replaces the trace's rows.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from _compare_helpers import differences

from tracekit.intake.otlp.convert import json_spans
from tracekit.intake.otlp.received import SPAN_NAMES, span_document
from tracekit.intake.otlp.stored import row_span
from tracekit.server.decode import received_otlp_json, spans_entry
from tracekit.server.loader import Loader, _Cycle
from tracekit.server.spool import Entry, Spool, encode_payload
from tracekit.store import Store

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = [
    *sorted((ROOT / "tests" / "frameworks" / "recordings").glob("*/*.otlp.json")),
    ROOT / "sample_traces" / "otlp" / "escalation_desk.otlp.jsonl",
]
TRACE = f"{7:032x}"
_WHEN = frozenset({"derived_at"})
_BY_TYPE = "SELECT type, count(*) FROM events GROUP BY 1 ORDER BY 1"


def _bodies(path: Path) -> list[bytes]:
    """The requests a file's spans are posted in: its document, or one a line."""
    text = path.read_bytes()
    try:
        json.loads(text)
    except ValueError:
        return [line for line in text.splitlines() if line.strip()]
    return [text]


def _entries(bodies: list[bytes]) -> list[Entry]:
    return [spans_entry(received_otlp_json(body), "serve:otlp") for body in bodies]


def _cycle(entries: list[Entry], start: int = 0) -> _Cycle:
    cycle = _Cycle(end=start)
    for entry in entries:
        payload = encode_payload(entry)
        cycle.entries.append((cycle.end, payload, 0.0))
        cycle.end += len(payload)
    return cycle


@contextlib.contextmanager
def _loader(tmp_path: Path, name: str) -> Any:
    spool = Spool(tmp_path / f"spool-{name}", limit=1 << 24, deliver=lambda *args: None)
    try:
        with Store(tmp_path / f"{name}.duckdb") as store:
            yield Loader(store, spool, settle=0.0), store
    finally:
        spool.stop()


def _span(span_id: int, parent: int | None, name: str, agent: str) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": f"{span_id:016x}",
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + span_id),
        "endTimeUnixNano": str(1_700_000_001_000_000_000 - span_id),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": agent}},
        ],
    }
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    return span


def _body(*spans: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def test_every_recorded_trace_derived_in_hand_equals_the_stores_road_table_by_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = _entries([body for path in RECORDINGS for body in _bodies(path)])
    cycle = _cycle(entries)
    road: list[str] = []
    with _loader(tmp_path, "hand") as (loader, store):
        real = store.derive_traces

        def derive(traces: list[str], **kwargs: Any) -> Any:
            road.extend(traces)
            return real(traces, **kwargs)

        monkeypatch.setattr(store, "derive_traces", derive)
        loader.load_spans(cycle)
        loader.load_once(final=True)
        assert loader.pending_spans == 0 and loader.failed is None
        traces = [r[0] for r in store.con.execute("SELECT DISTINCT trace_id FROM spans").fetchall()]
        linked = store.con.execute(
            "SELECT trace_id FROM spans WHERE linked IS NOT NULL"
            " UNION SELECT unnest(linked) FROM spans"
        ).fetchall()
    # Only the traces a span link joins go the store's road (with every trace they join).
    joined = {t for (t,) in linked}
    assert set(road) <= joined and len(set(traces) - joined) > 20
    from tracekit.intake.otlp.received import rows_table
    from tracekit.server.spooled import spooled_spans

    rows, lines, _, _ = spooled_spans(cycle.entries)
    with Store(tmp_path / "road.duckdb") as store:
        store.load_spans(rows_table(rows, lines), source="serve:otlp")
        store.derive_traces(sorted(traces), source="serve:derive")
    # Derived in two steps (in hand, then the linked traces), one ``ingest_log`` row more.
    found = differences(tmp_path / "hand.duckdb", tmp_path / "road.duckdb", skip=_WHEN)
    assert [d for d in found if d[0] != "ingest_log"] == []


def test_a_root_after_its_trace_was_derived_in_hand_is_derived_again_from_the_store(
    tmp_path: Path,
) -> None:
    children = _entries([_body(_span(2, 1, "invoke_agent worker", "worker"))])
    root = _entries([_body(_span(1, None, "invoke_agent boss", "boss"))])
    with _loader(tmp_path, "late") as (loader, store):
        first = _cycle(children)
        loader.load_spans(first)
        loader.load_once(final=True)  # derived in hand, rootless: an incomplete run
        (status,) = store.con.execute("SELECT status FROM runs").fetchall()[0]
        assert status == "running"
        derived = store.con.execute("SELECT spans FROM derivations").fetchall()
        assert derived == [(1,)]
        loader.load_spans(_cycle(root, first.end))
        assert loader.hand.pending == 0 and len(loader.waiting) == 1  # the store's road
        loader.load_once(final=True)
        runs = store.con.execute("SELECT agent, status FROM runs").fetchall()
        derived = store.con.execute("SELECT spans FROM derivations").fetchall()
        events = store.con.execute(_BY_TYPE).fetchall()
    assert runs == [("boss", "ok")] and derived == [(2,)]
    with Store(tmp_path / "once.duckdb") as once:  # the two spans derived together: no duplicate
        once.load_spans(_rows_of(children + root), source="serve:otlp")
        once.derive_traces([TRACE], source="serve:derive")
        assert once.con.execute(_BY_TYPE).fetchall() == events


def test_a_replayed_entry_of_a_trace_derived_in_hand_derives_nothing_again(tmp_path: Path) -> None:
    entries = _entries([_body(_span(1, None, "invoke_agent boss", "boss"))])
    with _loader(tmp_path, "replay") as (loader, store):
        cycle = _cycle(entries)
        loader.load_spans(cycle)
        loader.load_once(final=True)
        loads = store.con.execute("SELECT count(*) FROM ingest_log").fetchall()
        loader.load_spans(cycle)  # the spool replayed: every span a duplicate
        assert loader.pending_spans == 0
        loader.load_once(final=True)
        again = store.con.execute(
            "SELECT count(*) FROM ingest_log WHERE source = 'serve:derive'"
        ).fetchall()
        assert store.con.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]
    assert loads == [(2,)] and again == [(1,)]


def test_a_stored_row_reads_as_the_span_its_document_decodes_to() -> None:
    entries = _entries([body for path in RECORDINGS for body in _bodies(path)])
    rows = [tuple(row) for entry in entries for row in entry.spans]
    assert len(rows) > 100
    for row in rows:
        document = (
            '{"resourceSpans":[' + span_document(dict(zip(SPAN_NAMES, row, strict=True))) + "]}"
        )
        assert row_span(row) == json_spans(document.encode())[0]


def test_the_span_directory_of_an_older_store_is_made_from_its_spans(tmp_path: Path) -> None:
    from tracekit.store.schema import MIGRATIONS

    old = tmp_path / "v11.duckdb"
    con = duckdb.connect(str(old))
    for number, script in enumerate(MIGRATIONS[:11], start=1):
        con.execute(script)
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [number])
    con.close()
    with Store(old) as store:
        store.load_spans(_rows_of(_entries([_body(_span(1, None, "a", "a"))])), source="x")
        store.con.execute("DROP TABLE span_traces")  # a store of v11: spans, no directory
        store.con.execute("DELETE FROM schema_version WHERE version = 12")
    with Store(old) as store:
        found = store.con.execute("SELECT trace_id, ingest_id, spans FROM span_traces").fetchall()
        assert store.underived_traces() == [TRACE]
    assert found == [(TRACE, 1, 1)]


def _rows_of(entries: list[Entry]) -> Any:
    from tracekit.intake.otlp.received import rows_table

    rows = [tuple(row) for entry in entries for row in entry.spans]
    return rows_table(rows, list(range(len(rows))))


def test_past_its_bound_the_hand_gives_its_traces_to_the_store_which_derives_them(
    tmp_path: Path,
) -> None:
    from test_server_recovery import _batch

    entries = _entries([_batch(0, 4)])
    with _loader(tmp_path, "shed") as (loader, store):
        loader.hand.most = 2
        loader.load_spans(_cycle(entries))
        assert loader.hand.over
        for trace, spans in loader.hand.shed():
            loader.waiting.mark(trace, 0.0, spans)
        assert loader.hand.pending == 0 and len(loader.waiting) == 4
        loader.load_once(final=True)
        assert loader.pending_spans == 0
        runs = store.con.execute("SELECT count(*) FROM runs").fetchall()
        stamps = store.con.execute("SELECT count(*), sum(spans) FROM derivations").fetchall()
    assert runs == [(4,)] and stamps == [(4, 4)]
