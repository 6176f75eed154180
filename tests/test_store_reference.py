"""A fresh ingest's tables against a reference computed apart, in plain Python.

A small simulated fleet (with a few bad and duplicated lines mixed in) is
ingested through the installed command; every line is also decoded one by one
with msgspec (:func:`tracekit.events.decode_event`, the reader ``tracekit tree``
uses), and the rows ``events``, ``steps``, ``invocations`` and ``runs`` must
hold are built from those records here, without SQL. The store's set-based
parse, its duplicate check and its derive must give exactly these rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests._store_helpers import cli
from tracekit import Store
from tracekit.events import Enter, Exit, Node, RunEnd, RunStart, decode_event
from tracekit.simulation import simulate

_SEP = "\x1f"
_TYPES = {Enter: "enter", Exit: "exit", Node: "node", RunStart: "run.start", RunEnd: "run.end"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("reference")
    clean = base / "clean.jsonl"
    simulate(clean, runs=120, seed=11)
    lines = clean.read_text().splitlines(keepends=True)
    # A bad line, a line repeated (a duplicate), a spaced line (the slow path).
    mixed = [*lines[:5], '{"type":"node","ts":"soon"}\n', lines[3], *lines[5:]]
    spaced = json.dumps(json.loads(mixed[-1]), separators=(", ", ": ")) + "\n"
    mixed[-1] = spaced
    trace = base / "fleet.jsonl"
    trace.write_text("".join(mixed))
    db = base / "s.duckdb"
    done = cli("ingest", str(trace), db=db)
    assert done.returncode == 0, done.stderr
    return trace, db


def _records(trace: Path) -> list[tuple[int, Any, str]]:
    """(line, record, raw) of every line msgspec accepts, the first of each key only."""
    seen: set[str] = set()
    out = []
    for number, raw in enumerate(trace.read_text().splitlines(), 1):
        try:
            event = decode_event(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):  # rejected: not a record
            continue
        key = _key(event)
        if key not in seen:
            seen.add(key)
            out.append((number, event, raw))
    return out


def _key(e: Any) -> str:
    if isinstance(e, Enter | Exit):
        return _SEP.join((_TYPES[type(e)], e.runId, e.invocationId))
    if isinstance(e, Node):
        return _SEP.join(("node", e.runId, e.id, _num(e.ts), _num(e.seq)))
    return _SEP.join((_TYPES[type(e)], e.runId))


def _num(value: float | int | None) -> str:
    if value is None:
        return ""
    return str(float(value)) if isinstance(value, float) else str(value)


def _exit_status(e: Exit) -> str:
    if e.status is not None:
        return e.status
    return "error" if e.ok is False or e.error is not None else "ok"


def test_events_hold_every_accepted_line_once_with_its_fields(fleet: tuple[Path, Path]) -> None:
    trace, db = fleet
    expected = []
    for number, e, raw in _records(trace):
        inv = isinstance(e, Enter | Exit)
        error = getattr(e, "error", None)
        expected.append(
            (
                number,
                _TYPES[type(e)],
                e.ts,
                e.runId,
                e.agent if isinstance(e, Enter | Exit | RunStart) else None,
                e.invocationId if inv else None,
                e.id if isinstance(e, Node) else (e.node if inv else None),
                _exit_status(e) if isinstance(e, Exit) else None,
                error.code if error is not None else None,
                raw,
            )
        )
    with Store(db) as store:
        rows = store.con.execute(
            "SELECT line, type, ts_ms, run_id, agent, invocation_id, node, status, error_code,"
            " raw FROM events ORDER BY line"
        ).fetchall()
        rejects = store.con.execute("SELECT line FROM rejects").fetchall()
    assert rows == expected
    assert rejects == [(6,)]


def test_steps_invocations_and_runs_are_the_records_paired(fleet: tuple[Path, Path]) -> None:
    trace, db = fleet
    records = [e for _, e, _ in _records(trace)]
    steps = sorted((e.runId, e.id, e.ts, e.ok) for e in records if isinstance(e, Node))
    enters = {(e.runId, e.invocationId): e for e in records if isinstance(e, Enter)}
    exits = {(e.runId, e.invocationId): e for e in records if isinstance(e, Exit)}
    invocations = sorted(
        (
            run,
            inv,
            (enters.get((run, inv)) or exits[(run, inv)]).agent,
            enters[(run, inv)].ts if (run, inv) in enters else None,
            exits[(run, inv)].ts if (run, inv) in exits else None,
            _exit_status(exits[(run, inv)]) if (run, inv) in exits else "running",
        )
        for run, inv in enters.keys() | exits.keys()
    )
    starts = {e.runId: e for e in records if isinstance(e, RunStart)}
    ends = {e.runId: e for e in records if isinstance(e, RunEnd)}
    runs = sorted(
        (
            run,
            starts[run].agent if run in starts else None,
            run in starts,
            run in ends,
            ends[run].ok if run in ends else None,
            starts[run].session if run in starts else None,
        )
        for run in starts.keys() | ends.keys()
    )
    with Store(db) as store:
        sql = store.con.execute
        assert sql("SELECT run_id, step_id, ts_ms, ok FROM steps ORDER BY ALL").fetchall() == steps
        assert (
            sql(
                "SELECT run_id, invocation_id, agent, start_ms, end_ms, status FROM invocations"
                " ORDER BY ALL"
            ).fetchall()
            == invocations
        )
        assert (
            sql(
                "SELECT run_id, agent, has_start, has_end, ok, session_id FROM runs"
                " WHERE has_start OR has_end ORDER BY ALL"
            ).fetchall()
            == runs
        )
