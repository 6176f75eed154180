"""Quarantine: a batch that fails is bisected down to its bad items; the rest goes on."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracekit.intake.otlp.convert as convert
from tracekit._util.quarantine import leave_out, quarantine
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.decode_json import Span
from tracekit.server.quarantine import load_quarantined
from tracekit.store import Store


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.sets(st.integers(0, 299), max_size=6))
def test_quarantine_sets_aside_exactly_the_bad_items(size: int, bad: set[int]) -> None:
    items = list(range(size))
    calls = 0

    def step(part: Sequence[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if bad & set(part):
            raise ValueError(f"bad {sorted(bad & set(part))[0]}")
        return list(part)

    done = quarantine(items, step)
    kept = sorted(x for part in done.results for x in part)
    assert kept == [x for x in items if x not in bad]
    assert sorted(x for x, _ in done.rejected) == sorted(bad & set(items))
    assert all(reason == f"ValueError: bad {x}" for x, reason in done.rejected)
    assert calls <= 1 + 2 * max(len(bad & set(items)), 1) * size.bit_length()


def test_a_fatal_failure_or_an_unhealthy_step_is_raised_not_quarantined() -> None:
    def step(part: Sequence[int]) -> int:
        raise OSError("disk full")

    with pytest.raises(OSError):
        quarantine([1, 2, 3], step, fatal=lambda exc: isinstance(exc, OSError))
    with pytest.raises(OSError):
        quarantine([1, 2, 3], step, healthy=lambda: False)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200), st.sets(st.integers(0, 199), max_size=5))
def test_leave_out_finds_the_items_whose_absence_lets_the_step_work(
    size: int, bad: set[int]
) -> None:
    items = list(range(size))
    assert sorted(leave_out(items, lambda part: not bad & set(part))) == sorted(bad & set(items))


def test_a_record_the_store_refuses_is_rejected_alone_with_its_reason(tmp_path: Path) -> None:
    good = [
        b'{"v":1,"type":"run.start","runId":"r%d","agent":"a","ts":"2026-01-01T00:00:00Z"}' % i
        for i in range(9)
    ]
    records = [*good[:4], b'{"poison":true}', *good[4:]]
    with Store(tmp_path / "q.duckdb") as store:
        line = 1

        def load(part: Sequence[bytes], refused: Sequence[tuple[str, str]]) -> int:
            nonlocal line
            if any(b"poison" in record for record in part):  # what DuckDB might refuse
                raise duckdb.ConversionException("Could not convert the poison")
            numbered = [(line + len(part) + i, t, r) for i, (t, r) in enumerate(refused)]
            report = store.ingest_records(list(part), source="q", first_line=line, refused=numbered)
            line += len(part) + len(refused)
            return report.totals.accepted

        stored, aside = load_quarantined(records, [], load, healthy=lambda: True)
        assert (stored, aside) == (9, 1)
        rejects = store.sql("SELECT raw, reason FROM rejects")
        assert list(rejects["raw"]) == ['{"poison":true}']
        assert "ConversionException: Could not convert the poison" in rejects["reason"][0]
        assert int(store.sql("SELECT count(*) AS n FROM runs")["n"][0]) == 9


def test_a_span_the_mapping_fails_on_costs_only_its_own_rejection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mapping = convert.map_traces

    def fragile(spans, rejects, counts, traces):  # type: ignore[no-untyped-def]
        if any(span.name == "poison" for span in spans.values()):
            raise OverflowError("cannot convert float infinity to integer")
        return mapping(spans, rejects, counts, traces)

    monkeypatch.setattr(convert, "map_traces", fragile)
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
    spans = [
        Span("ab" * 16, "01" * 8, "", "invoke_agent a", 10, 90, dict(agent), False, "", None),
        Span("ab" * 16, "02" * 8, "01" * 8, "step", 20, 30, {}, False, "", None),
        Span("ab" * 16, "03" * 8, "01" * 8, "poison", 40, 50, {}, False, "", None),
        Span("cd" * 16, "04" * 8, "", "invoke_agent b", 10, 90, dict(agent), False, "", None),
    ]
    converter = OtlpConverter()
    converter.feed_spans(spans, line=3)
    events = converter.finish()
    assert sorted(type(e).__name__ for e in events).count("RunStart") == 2
    assert [e.id for e in events if type(e).__name__ == "Node"] == ["step"]
    ((line, raw, reason),) = converter.take_rejects()
    assert line == 3 and '"spanId":"0303030303030303"' in raw
    assert (
        reason
        == "the mapping failed on it: OverflowError: cannot convert float infinity to integer"
    )


def test_a_spool_entry_the_loader_cannot_read_is_refused_and_the_rest_stored(
    tmp_path: Path,
) -> None:
    from test_server_recovery import _batch

    from tracekit.server.decode import received_otlp_json, spans_entry
    from tracekit.server.loader import Loader, _Cycle
    from tracekit.server.spool import Spool, encode_payload
    from tracekit.store import Store

    payload = encode_payload(spans_entry(received_otlp_json(_batch(0, 2)), "serve:otlp"))
    entries = [(0, b"\xc1 not msgpack", 0.0), (50, payload, 0.0)]
    spool = Spool(tmp_path / "spool", limit=1 << 20, deliver=lambda *args: None)
    with contextlib.closing(_Stopping(spool)), Store(tmp_path / "q.duckdb") as store:
        loader = Loader(store, spool)
        loader.load_spans(_Cycle(entries=entries, end=90))
        loader.load_once(final=True)
        ((raw, reason),) = store.con.execute("SELECT raw, reason FROM rejects").fetchall()
        spans = store.con.execute("SELECT count(*) FROM spans").fetchone()
        runs = store.con.execute("SELECT count(*) FROM runs").fetchone()
    assert raw == "spool entry at byte 0" and reason.startswith("unreadable: ")
    assert spans == (2,) and runs == (2,)
    assert loader.rejected_later == 1


def test_a_trace_the_store_cannot_derive_is_set_aside_and_the_rest_derived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_server_recovery import _batch

    from tracekit.server.decode import received_otlp_json, spans_entry
    from tracekit.server.loader import Loader, _Cycle
    from tracekit.server.spool import Spool, encode_payload
    from tracekit.store import Store

    payload = encode_payload(spans_entry(received_otlp_json(_batch(0, 4)), "serve:otlp"))
    spool = Spool(tmp_path / "spool", limit=1 << 20, deliver=lambda *args: None)
    with contextlib.closing(_Stopping(spool)), Store(tmp_path / "q.duckdb") as store:
        real = store.derive_traces
        poison = f"{2:032x}"

        def derive(traces: list[str], **kw: Any) -> Any:
            if poison in traces:
                raise ValueError("a value the store cannot hold")
            return real(traces, **kw)

        real_in_hand = store.derive_in_hand

        def in_hand(derived: Any, **kw: Any) -> Any:
            if poison in derived.traces:  # the step in hand fails whole: the store's road bisects
                raise ValueError("a value the store cannot hold")
            return real_in_hand(derived, **kw)

        monkeypatch.setattr(store, "derive_traces", derive)
        monkeypatch.setattr(store, "derive_in_hand", in_hand)
        loader = Loader(store, spool)
        loader.load_spans(_Cycle(entries=[(0, payload, 0.0)], end=len(payload)))
        loader.load_once(final=True)
        assert loader.failed is None and loader.pending_spans == 0
        rejects = store.con.execute("SELECT raw, reason FROM rejects").fetchall()
        runs = store.con.execute("SELECT count(*) FROM runs").fetchone()
    assert runs == (3,)
    ((raw, reason),) = rejects
    assert poison in raw and "a value the store cannot hold" in reason
    assert loader.quarantined == 1


class _Stopping:
    """Closes a spool's segment (``contextlib.closing``) when the test is done with it."""

    def __init__(self, spool: Any) -> None:
        self.spool = spool

    def close(self) -> None:
        self.spool.stop()
