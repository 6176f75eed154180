"""A spool replayed after a restart derives nothing twice; refusals are counted once per trace.

The loader runs here on a real spool and a real store, as ``tracekit serve``
runs it, one cycle at a time: a spool whose checkpoint never moved stands for
a server killed before its store's file held what it had loaded.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from test_server_spool import _trace

from tracekit.server.decode import received_otlp_json, spans_entry
from tracekit.server.loader import Loader, _Cycle
from tracekit.server.spool import Spool, encode_payload
from tracekit.store import Store

_TABLES = ("spans", "events", "runs", "invocations", "steps", "closure", "derivations", "rejects")
_AGENT = [
    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
    {"key": "gen_ai.agent.name", "value": {"stringValue": "a"}},
]


def _body(spans: list[dict[str, Any]]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


@contextlib.contextmanager
def _spool(path: Path) -> Iterator[Spool]:
    spool = Spool(path, limit=1 << 20, deliver=lambda *args: None)
    spool.start()
    try:
        yield spool
    finally:
        spool.stop()


def _append(spool: Spool, spans: list[dict[str, Any]]) -> None:
    spool.append(spans_entry(received_otlp_json(_body(spans)), "serve:otlp")).result(10)


def _served(store: Store, spool: Spool) -> Loader:
    """A start that replays the spool from its checkpoint, loads and derives it all, and never
    moves the checkpoint (killed before its store's file held the rows)."""
    loader = Loader(store, spool, durable_every=1e9)
    loader.replay()
    while loader.queued:
        loader.load_once(final=True)
    return loader


def _counts(store: Store) -> dict[str, int]:
    return {t: int(store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in _TABLES}


def test_a_spool_replayed_again_after_restarts_stores_and_derives_nothing_twice(
    tmp_path: Path,
) -> None:
    *children, root = _trace(3)
    with _spool(tmp_path / "spool") as spool, Store(tmp_path / "r.duckdb") as store:
        _append(spool, children)
        _append(spool, _trace(4))
        first = _served(store, spool)
        assert (first.spans_stored, first.duplicates, first.pending_spans) == (7, 0, 0)
        before = _counts(store)
        derived = store.con.execute("SELECT trace_id, derived_at FROM derivations").fetchall()
        again = _served(store, spool)  # the same entries, replayed
        assert (again.spans_stored, again.duplicates, again.loads) == (0, 7, 1)
        assert _counts(store) == before
        # nothing derived again for spans the store held: the same derivations, same times
        assert store.con.execute("SELECT trace_id, derived_at FROM derivations").fetchall() == (
            derived
        )
        _append(spool, [root])  # the root comes after a restart, with the old entries replayed
        last = _served(store, spool)
        assert (last.spans_stored, last.duplicates) == (1, 7)
        after = _counts(store)
        runs = store.con.execute("SELECT agent FROM runs ORDER BY agent").fetchall()
    assert runs == [("front",), ("front",)]  # trace 3 whole (its early run replaced), and trace 4
    assert after["spans"] == 8 and after["derivations"] == 2
    assert after["events"] > before["events"] and after["rejects"] == 0


def _cycle(spans: list[dict[str, Any]], at: int) -> _Cycle:
    payload = encode_payload(spans_entry(received_otlp_json(_body(spans)), "serve:otlp"))
    return _Cycle(entries=[(at, payload, 0.0)], end=at + len(payload))


def _span(span: int, parent: int, name: str, start: int, **more: Any) -> dict[str, Any]:
    return {
        "traceId": "ab" * 16,
        "spanId": f"{span:016x}",
        "parentSpanId": f"{parent:016x}" if parent else "",
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10),
        **more,
    }


def test_spans_the_rules_refuse_are_counted_once_when_their_trace_is_derived_again(
    tmp_path: Path,
) -> None:
    looped = [
        _span(1, 0, "invoke_agent a", 100, attributes=_AGENT),
        _span(2, 3, "x", 110),  # 2 and 3 are each other's parent: both refused
        _span(3, 2, "y", 120),
    ]
    spool = Spool(tmp_path / "spool", limit=1 << 20, deliver=lambda *args: None)
    with contextlib.closing(_Closing(spool)), Store(tmp_path / "r.duckdb") as store:
        loader = Loader(store, spool)
        loader.load_spans(_cycle(looped, 0))
        loader.load_once(final=True)
        assert (loader.rejected, loader.rejected_later) == (2, 2)
        loader.load_spans(_cycle([_span(4, 1, "z", 130)], 1000))  # a late span: derived again
        loader.load_once(final=True)
        held = store.con.execute("SELECT count(*) FROM rejects").fetchone()
        reasons = store.con.execute("SELECT DISTINCT reason FROM rejects").fetchall()
    assert held == (2,) and "parent links loop" in reasons[0][0]
    assert (loader.rejected, loader.rejected_later) == (2, 2)


class _Closing:
    def __init__(self, spool: Spool) -> None:
        self.spool = spool

    def close(self) -> None:
        self.spool.stop()


def test_a_stop_past_its_deadline_leaves_traces_underived_and_the_next_start_derives_them(
    tmp_path: Path,
) -> None:
    payload = encode_payload(spans_entry(received_otlp_json(_body(_trace(5))), "serve:otlp"))
    with _spool(tmp_path / "spool") as spool, Store(tmp_path / "r.duckdb") as store:
        stopping = Loader(store, spool, stop_derive=0.0)
        stopping.deliver(0, len(payload), None, payload, 4)
        stopping.start()
        stopping.stop()
        assert (stopping.spans_stored, stopping.pending_spans, stopping.failed) == (4, 4, None)
        assert _counts(store)["runs"] == 0  # stored, not derived: the deadline had passed
        started = Loader(store, spool)
        started.load_once(final=True)
        runs = store.con.execute("SELECT agent, status FROM runs").fetchall()
    assert runs == [("front", "ok")] and started.pending_spans == 0
