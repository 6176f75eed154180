"""Spans are the record: stored as received, once, and derived (again) into the same store."""

from __future__ import annotations

import functools
import itertools
import json
import shutil
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._spans_helpers import Entry, count, differences, spans_of, write_spans
from tests._store_helpers import cli
from tracekit import Store
from tracekit.intake.otlp import derivation, records
from tracekit.simulation.simulator import simulate
from tracekit.store import ingest, sources, spans_derive


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.otlp.jsonl"
    simulate(str(path), runs=60, seed=7, format="otlp")
    return path


def test_every_span_is_stored_as_received_once(fleet: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        first = store.ingest(fleet)
        again = store.ingest(write_spans(tmp_path / "copy.jsonl", spans_of(fleet)))
    entries = spans_of(fleet)
    assert count(db, "SELECT count(*) FROM spans") == len(entries)
    assert count(db, "SELECT count(DISTINCT (trace_id, span_id)) FROM spans") == len(entries)
    # the copy's spans are all duplicates: counted, not stored, and nothing derived twice
    assert again.totals.duplicates == len(entries) == again.totals.read
    spans = again.sources[0].spans
    assert spans is not None and spans.duplicates == len(entries)
    assert f"+ {len(entries)} duplicates" in spans.line()
    assert first.totals.accepted == count(db, "SELECT count(*) FROM events")
    # all of it: attributes beyond those the rules read, events, resource, scope
    _, _, span = next(e for e in entries if e[2].get("attributes"))
    row = (
        duckdb.connect(str(db), read_only=True)
        .execute(
            "SELECT attributes, resource, name, start_ns FROM spans WHERE span_id = ?",
            [span["spanId"]],
        )
        .fetchone()
    )
    assert row is not None
    assert json.loads(row[0]) == span["attributes"]
    assert "service.name" in row[1]
    assert (row[2], row[3]) == (span["name"], int(span["startTimeUnixNano"]))


def test_a_root_that_comes_in_a_later_ingest_gives_one_whole_run(
    fleet: Path, tmp_path: Path
) -> None:
    entries = spans_of(fleet)
    roots = [e for e in entries if not e[2].get("parentSpanId")]
    rest = [e for e in entries if e[2].get("parentSpanId")]
    children = write_spans(tmp_path / "children.jsonl", rest)
    late = write_spans(tmp_path / "roots.jsonl", roots)
    served, fresh = tmp_path / "late.duckdb", tmp_path / "fresh.duckdb"
    with Store(served) as store:
        store.ingest(children)
        rootless = store.runs()
        assert len(rootless) > 0  # the traces without their root are runs already
        store.ingest(late)
    with Store(fresh) as store:
        store.ingest([children, late])
        assert len(store.runs()) == 60
    assert differences(served, fresh) == {}
    assert count(served, "SELECT count(*) FROM derivations") == count(
        served, "SELECT count(DISTINCT trace_id) FROM spans"
    )


def test_a_rederived_store_equals_a_fresh_ingest_under_the_new_rules(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = spans_of(fleet)
    half = len(entries) // 2  # a trace split over two files, too
    one = write_spans(tmp_path / "one.jsonl", entries[:half], per_line=5)
    two = write_spans(tmp_path / "two.jsonl", entries[half:], per_line=2)
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    with Store(old) as store:
        store.ingest([one, two])
        assert store.stale() is None
    # rules B: every record's service in capitals, under a new rules version
    original = records._common
    monkeypatch.setattr(
        records, "_common", lambda service, trace: original(service and service.upper(), trace)
    )
    monkeypatch.setattr(derivation, "RULES_VERSION", derivation.RULES_VERSION + 1)
    with Store(old) as store:
        stale = store.stale()
        assert stale is not None and "tracekit rederive" in stale
    with Store(new) as store:
        store.ingest([one, two])
    assert "runs (a not b)" in differences(old, new)  # A's rows differ from B's
    ticks: list[int] = []
    with Store(old) as store:

        class _Bar:
            def __init__(self, total: int) -> None:
                ticks.append(-total)

            def __enter__(self) -> object:
                return ticks.append

            def __exit__(self, *exc: object) -> None:
                return None

        report = store.rederive(progress=_Bar)
        assert report.traces == 60 and store.stale() is None
        assert store.runs().service.str.isupper().all()
    assert -ticks[0] == sum(ticks[1:]) == 60
    assert differences(old, new) == {}


def test_rederive_from_the_command_line_chooses_by_service(fleet: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cli("ingest", str(fleet), db=db)
    service = count(db, "SELECT service FROM spans ORDER BY service LIMIT 1")
    traces = count(db, f"SELECT count(DISTINCT trace_id) FROM spans WHERE service = '{service}'")
    out = cli("rederive", "--service", service, db=db).stdout
    assert f"derived {traces} trace" in out
    assert "derived 0 traces" in cli("rederive", "--since", "2h", db=db).stdout
    bad = cli("rederive", "--since", "soon", db=db, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("Error: --since 'soon'")


def test_an_older_store_keeps_its_otlp_runs_and_says_they_cannot_be_derived_again(
    fleet: Path, tmp_path: Path
) -> None:
    from tracekit.store.schema import MIGRATIONS

    made_now = tmp_path / "now.duckdb"
    with Store(made_now) as store:
        store.ingest(fleet)
    old = tmp_path / "v8.duckdb"
    con = duckdb.connect(str(old))
    for number, script in enumerate(MIGRATIONS[:8], start=1):
        con.execute(script)
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [number])
    con.execute(f"ATTACH '{made_now}' AS src (READ_ONLY)")
    for table in ("ingest_log", "events", "invocations", "steps", "runs", "rejects"):
        con.execute(
            f"INSERT INTO {table} SELECT * EXCLUDE (span_trace) FROM src.{table}"
            if table in ("events", "rejects")
            else f"INSERT INTO {table} SELECT * FROM src.{table}"
        )
    con.execute("DETACH src")
    con.close()
    result = cli("ingest", str(tmp_path / "nothing.jsonl"), db=old, check=False)
    assert "cannot be derived again" in result.stderr and "60 OTLP traces" in result.stderr
    with Store(old) as store:
        assert len(store.runs()) == 60
        assert store.rederive().traces == 0  # no spans: nothing to derive from
        # the spans again: their runs are derived from them, not doubled
        store.ingest(shutil.copy(fleet, tmp_path / "again.otlp.jsonl"))
    with Store(tmp_path / "fresh.duckdb") as fresh:
        fresh.ingest(tmp_path / "again.otlp.jsonl")
    assert differences(old, tmp_path / "fresh.duckdb") == {}


_SAME = {
    "invocations": "",
    "runs": "classified_at",
    "steps": "source, line",
    "closure": "",
    "fleet_calls": "",
}


_Tables = dict[str, list[tuple[object, ...]]]


def _tables(db: Path) -> _Tables:
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table, skip in _SAME.items():
            cols = f"* EXCLUDE ({skip})" if skip else "*"
            out[table] = sorted(con.execute(f"SELECT {cols} FROM {table}").fetchall(), key=repr)
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Entry], _Tables]:
    """A small fleet's spans, and the tables a single ingest of them in order gives."""
    folder = tmp_path_factory.mktemp("small")
    path = folder / "small.otlp.jsonl"
    simulate(str(path), runs=6, seed=3, format="otlp")
    with Store(folder / "ref.duckdb") as store:
        store.ingest(path)
    return list(spans_of(path)), _tables(folder / "ref.duckdb")


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_split_and_order_of_the_spans_gives_the_same_store(
    small: tuple[list[Entry], _Tables],
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
) -> None:
    """Spans shuffled, split over files and ingests (roots late or early): the same runs, once."""
    entries, expected = small
    order = data.draw(st.permutations(range(len(entries))))
    parts = data.draw(st.integers(1, 3))
    cuts = sorted(
        data.draw(st.lists(st.integers(0, len(entries)), min_size=parts - 1, max_size=parts - 1))
    )
    per_line = data.draw(st.integers(1, 4))
    folder = tmp_path_factory.mktemp("split")
    shuffled = [entries[i] for i in order]
    bounds = [0, *cuts, len(entries)]
    files = [
        write_spans(folder / f"part{n}.jsonl", shuffled[a:b], per_line=per_line)
        for n, (a, b) in enumerate(itertools.pairwise(bounds))
        if b > a
    ]
    with Store(folder / "s.duckdb") as store:
        for path in files:  # one ingest each: a trace may gain its root ingests later
            store.ingest(path)
    assert _tables(folder / "s.duckdb") == expected


def test_spans_derived_in_hand_equal_the_store_rederived_late_span_and_copy_included(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh ingest derives from the spans in hand; a late span or a copy sends a trace to the store."""
    # chunks of a few lines, so that traces settle and are derived while the file is read
    monkeypatch.setattr(ingest, "read_chunks", functools.partial(sources.read_chunks, size=4096))
    monkeypatch.setattr(sources, "_PIECE", 4096)
    entries = spans_of(fleet)
    first = entries[0][2]["traceId"]
    mine = [e for e in entries if e[2]["traceId"] == first]
    late = next(e for e in mine if e[2].get("parentSpanId"))
    others = [e for e in entries if e[2]["traceId"] != first]
    copy = (others[0][0], others[0][1], {**others[0][2], "name": "a second copy"})
    ordered = [e for e in mine if e is not late] + others + [late, copy]
    assert len(others) > derivation.SETTLE  # the first trace settles before its late span
    path = write_spans(tmp_path / "late.jsonl", ordered, per_line=1)
    fresh, again = tmp_path / "fresh.duckdb", tmp_path / "again.duckdb"
    from_store: list[str] = []
    real = spans_derive.derive_trace_ids

    def spy(con: object, traces: list[str], **kw: object) -> object:
        from_store.extend(traces)
        return real(con, traces, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(spans_derive, "derive_trace_ids", spy)
    with Store(fresh) as store:
        report = store.ingest(path)
        assert len(store.runs()) == 60
        assert report.totals.duplicates == 1
    assert first in from_store and len(from_store) < 60  # the late trace alone, from the store
    shutil.copy(fresh, again)
    with Store(again) as store:
        assert store.rederive().traces == 60
    assert differences(fresh, again) == {}
    assert count(fresh, "SELECT count(*) FROM spans WHERE name = 'a second copy'") == 0
