"""classify_store on real ingested traces: the same classes as the pure rules, set-based."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _fleet_helpers import CASES, ROLES, STEP_CASES, T0, all_cases, deep_failure, handled, write
from _store_helpers import cli

from tracekit.events import Exit
from tracekit.failures import classify_events, classify_run, run_facts
from tracekit.intake import read_trace
from tracekit.simulation.simulator import simulate
from tracekit.store import Store, StoreSink, loops
from tracekit.store.classify import classify_store
from tracekit.store.ingest import ingest_paths

_COLUMNS = (
    "outcome",
    "circle",
    "origin_invocation_id",
    "origin_agent",
    "origin_code",
    "origin_step",
)


def _runs(store: Store) -> dict[str, dict]:
    frame = store.sql(f"SELECT run_id, {', '.join(_COLUMNS)}, classified_at FROM runs")
    return {row["run_id"]: row for row in frame.to_dict(orient="records")}


def _none(value: object) -> object:
    return None if value is None or value != value else value


def test_hand_made_runs_classified_in_the_store(tmp_path: Path) -> None:
    trace = write(tmp_path / "cases.jsonl", all_cases())
    with Store(tmp_path / "s.duckdb") as store:
        ingest_paths(
            store.con, [trace], classify=False
        )  # the bare load, without the classification
        report = classify_store(store)
        assert report.runs == len(CASES)
        rows = _runs(store)
        for run_id, (_, expected) in CASES.items():
            got = {k: _none(rows[run_id][k]) for k in expected}
            assert got == expected, run_id
        roles = store.sql(
            "SELECT invocation_id, failure_role FROM invocations WHERE failure_role IS NOT NULL"
        )
        assert dict(zip(roles["invocation_id"], roles["failure_role"], strict=True)) == ROLES
        assert store.sql("SELECT count(*) AS n FROM runs WHERE classified_at IS NULL")["n"][0] == 0


def test_classify_is_idempotent_and_picks_up_what_a_later_ingest_changed(tmp_path: Path) -> None:
    events = deep_failure("late")
    exits = [e for e in events if isinstance(e, Exit) or e.__struct_config__.tag == "run.end"]
    first = write(tmp_path / "first.jsonl", [e for e in events if e not in exits])
    with Store(tmp_path / "s.duckdb") as store:
        ingest_paths(
            store.con, [first], classify=False
        )  # the bare load, without the classification
        assert classify_store(store).outcomes == {"incomplete": 1}
        assert classify_store(store).runs == 0  # nothing new: nothing done
        ingest_paths(
            store.con, [write(tmp_path / "second.jsonl", exits)], classify=False
        )  # the exits, later
        assert classify_store(store).outcomes == {"failed:child": 1}
        row = _runs(store)["late"]
        assert (row["origin_agent"], row["origin_code"]) == ("invoices", "TIMEOUT")


def _unclassified(store: Store) -> int:
    return int(store.sql("SELECT count(*) AS n FROM runs WHERE classified_at IS NULL")["n"][0])


def test_every_writer_classifies_what_it_wrote(tmp_path: Path) -> None:
    """Store.ingest, StoreSink (through ingest_records) and `tracekit ingest` all classify."""
    events = deep_failure("late")
    with Store(tmp_path / "api.duckdb") as store:
        store.ingest(write(tmp_path / "a.jsonl", events))
        assert _unclassified(store) == 0
        assert _runs(store)["late"]["outcome"] == "failed:child"
    with Store(tmp_path / "sink.duckdb") as store:
        sink = StoreSink(store, batch=1000)
        for event in events:
            sink.emit(event)
        sink.close()
        assert _unclassified(store) == 0
        assert _runs(store)["late"]["outcome"] == "failed:child"
    db = tmp_path / "cli.duckdb"
    cli("ingest", str(tmp_path / "a.jsonl"), db=db)
    with Store(db, read_only=True) as store:
        assert _unclassified(store) == 0
        assert _runs(store)["late"]["outcome"] == "failed:child"


def test_the_fleet_report_only_reads(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cli("ingest", str(write(tmp_path / "a.jsonl", deep_failure("late"))), db=db)
    before = db.read_bytes()
    cli("fleet", "--format", "json", db=db)
    assert db.read_bytes() == before


def test_fleet_calls_resolve_the_caller(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write(tmp_path / "h.jsonl", handled("h", t0=T0)))
        classify_store(store)
        calls = store.sql("SELECT caller, agent, status FROM fleet_calls ORDER BY agent")
        assert calls.to_dict(orient="records") == [
            {"caller": "desk", "agent": "billing", "status": "ok"},
            {"caller": "billing", "agent": "refunds", "status": "error"},
            {"caller": "desk", "agent": "reply", "status": "ok"},
        ]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("fleet")
    trace, truth = base / "fleet.jsonl", base / "truth.jsonl"
    simulate(trace, runs=500, seed=33, truth=truth)
    db = base / "fleet.duckdb"
    with Store(db) as store:
        store.ingest(trace)
        classify_store(store)
    return trace, truth, db


def test_simulated_fleet_in_the_store_matches_the_truth(fleet: tuple[Path, Path, Path]) -> None:
    _, truth, db = fleet
    with Store(db, read_only=True) as store:
        rows = _runs(store)
    outcomes = set()
    for line in truth.read_text().splitlines():
        expected = json.loads(line)
        row = rows[expected["run_id"]]
        for key in _COLUMNS:
            if key in expected:
                assert _none(row[key]) == expected[key], (expected["run_id"], key)
        outcomes.add(row["outcome"])
    assert len(rows) == 500 and len(outcomes) == 7


def test_set_based_classification_equals_the_pure_rules_on_full_facts(
    fleet: tuple[Path, Path, Path],
) -> None:
    trace, _, db = fleet
    with Store(db, read_only=True) as store:
        rows = _runs(store)
    with Store(db, read_only=True) as store:
        stored = {row.run_id: row for row in loops(store)}
    found = {}
    for facts in run_facts(read_trace(trace).events):
        finding = classify_run(facts)
        row = rows[facts.run_id]
        assert row["outcome"] == finding.outcome, facts.run_id
        assert _none(row["circle"]) == finding.circle
        assert _none(row["origin_agent"]) == finding.origin_agent
        assert _none(row["origin_code"]) == finding.origin_code
        if finding.loop is not None:
            loop = finding.loop
            found[facts.run_id] = (loop.circle, loop.revisits, loop.stopped, loop.limit_code,
                                   loop.origin_agent, len(loop.members))  # fmt: skip
    assert found  # the fleet's recursion refusals are loops refused on the call path
    assert {
        run: (r.circle, r.revisits, r.stopped, r.limit_code, r.origin_agent, r.invocations)
        for run, r in stored.items()
    } == found


def test_the_same_fleet_from_otlp_gets_the_same_classes(tmp_path: Path) -> None:
    truth = tmp_path / "truth.jsonl"
    simulate(tmp_path / "fleet.otlp.jsonl", runs=300, seed=34, format="otlp", truth=truth)
    with Store(tmp_path / "otlp.duckdb") as store:
        store.ingest(tmp_path / "fleet.otlp.jsonl")
        classify_store(store)
        rows = _runs(store)
    for line in truth.read_text().splitlines():
        expected = json.loads(line)
        row = rows[expected["run_id"]]
        for key in _COLUMNS:
            if key in expected:
                assert _none(row[key]) == expected[key], (expected["run_id"], key)


def _step_cases() -> list:
    events: list = []
    for run_id, (build, _) in STEP_CASES.items():
        events += build(run_id)
    return events


def test_a_failed_step_under_an_agent_that_went_on_is_degraded_in_the_store(
    tmp_path: Path,
) -> None:
    events = _step_cases() + all_cases()
    trace = write(tmp_path / "steps.jsonl", events)
    db = tmp_path / "s.duckdb"
    cli("ingest", str(trace), db=db)
    with Store(db, read_only=True) as store:
        rows = _runs(store)
    for run_id, (_, expected) in STEP_CASES.items():
        assert {k: _none(rows[run_id][k]) for k in expected} == expected, run_id
    for run_id, finding in classify_events(events).items():  # set-based = the pure rules
        got = {k: _none(rows[run_id][k]) for k in _COLUMNS if k != "origin_invocation_id"}
        want = {k: getattr(finding, k) for k in _COLUMNS if k != "origin_invocation_id"}
        assert got == want, run_id
    listed = [
        json.loads(line) for line in cli("runs", "--format", "json", db=db).stdout.splitlines()
    ]
    step = {r["run_id"]: r["origin_step"] for r in listed}
    assert step["toolhandled"] == "refund_api" and step["fine"] is None
    fleet = cli("fleet", db=db).stdout
    assert re.search(r"│ degraded +│ +4 │", fleet)  # handled + the three step cases
    assert "Degraded runs: ended ok, a delegation or a step inside failed (4; newest)" in fleet


def test_a_store_classified_before_v8_gets_its_failed_step_runs_again(tmp_path: Path) -> None:
    import duckdb

    trace = write(tmp_path / "steps.jsonl", _step_cases())
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.ingest(trace)
    con = duckdb.connect(str(db))  # as a v7 store left them: no origin_step, the runs ok
    con.execute("ALTER TABLE runs DROP COLUMN origin_step")
    con.execute("UPDATE runs SET outcome = 'ok', origin_agent = NULL, origin_code = NULL"
                " WHERE run_id IN ('toolhandled', 'roottool')")  # fmt: skip
    con.execute("DELETE FROM schema_version WHERE version >= 8")
    con.execute("DROP TABLE loops")  # made by a later migration, made again
    for table in ("events", "rejects"):  # and what v9 added
        con.execute(f"ALTER TABLE {table} DROP COLUMN span_trace")
    con.close()
    with Store(db) as store:  # a writer migrates and classifies what v8 asks for again
        rows = _runs(store)
        assert store.sql("SELECT count(*) AS n FROM runs WHERE classified_at IS NULL").n[0] == 0
    for run_id, (_, expected) in STEP_CASES.items():
        assert {k: _none(rows[run_id][k]) for k in expected} == expected, run_id
