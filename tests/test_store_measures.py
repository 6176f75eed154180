"""Own time, tokens, edge sources and sessions in the store (migration v4, derive, fleet_calls)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest
from _tree_helpers import call, enter, exit_, write_jsonl

from tracekit.events import EdgeInfo, Event, RunEnd, RunStart, Usage
from tracekit.intake import read_trace
from tracekit.simulation import SimulationRates, simulate
from tracekit.store import Store
from tracekit.store.schema import MIGRATIONS
from tracekit.tree import AgentStep, build_forest, iter_steps, measure

RATES = SimulationRates(
    failure=0.1, recursion=0.05, refusal=0.05, handled=0.1, cancel=0.05, crash=0.05
)


def _same(a: object, b: object) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return bool(a == b)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("measures")
    trace, truth, db = base / "fleet.jsonl", base / "truth.jsonl", base / "fleet.duckdb"
    simulate(trace, runs=150, seed=5, rates=RATES, truth=truth)
    with Store(db) as store:
        store.ingest(trace)
    return {"trace": trace, "truth": truth, "db": db}


def test_the_store_measures_every_invocation_as_the_tree_does(fleet: dict[str, Path]) -> None:
    """Two implementations (SQL over the store, Python over the tree) agree on every call."""
    forest = build_forest(read_trace(fleet["trace"]).events)
    measure(r.steps for r in forest.runs)
    expected = {
        s.invocationId: s
        for s in iter_steps(r.steps for r in forest.runs)
        if isinstance(s, AgentStep)
    }
    with Store(fleet["db"], read_only=True) as store:
        rows = store.sql(
            "SELECT invocation_id, own_ms, input_tokens, output_tokens, total_input_tokens,"
            " total_output_tokens, models FROM invocations"
        ).to_dict("records")
    assert len(rows) == len(expected) > 300
    for row in rows:
        step = expected[row["invocation_id"]]
        own, total = step.usage, step.totalUsage
        assert _same(row["own_ms"], step.ownMs), row
        assert _same(row["input_tokens"], own.inputTokens if own else None)
        assert _same(row["output_tokens"], own.outputTokens if own else None)
        assert _same(row["total_input_tokens"], total.inputTokens if total else None), row
        assert _same(row["total_output_tokens"], total.outputTokens if total else None), row
        models = row["models"]
        assert (list(models) if models is not None and len(models) else None) == (
            own.models if own else None
        )


def test_tokens_roll_up_at_every_node_of_the_store(fleet: dict[str, Path]) -> None:
    with Store(fleet["db"], read_only=True) as store:
        wrong = store.sql(
            """
            SELECT p.invocation_id FROM invocations p
            LEFT JOIN invocations c ON c.parent_invocation_id = p.invocation_id
                AND c.parent_run_id = p.run_id
            WHERE p.root_run_id IS NOT NULL
            GROUP BY p.invocation_id, p.input_tokens, p.total_input_tokens
            HAVING coalesce(p.input_tokens, 0) + coalesce(sum(c.total_input_tokens), 0)
                <> coalesce(p.total_input_tokens, 0)
            """
        )
        assert wrong.empty
        checked = store.sql(
            "SELECT count(*) AS n FROM invocations WHERE own_ms < 0 OR own_ms > duration_ms"
        )
        assert checked.n[0] == 0


def test_runs_keep_their_session_and_tokens_as_the_simulator_says(fleet: dict[str, Path]) -> None:
    truth = {row["run_id"]: row for row in map(json.loads, fleet["truth"].read_text().splitlines())}
    with Store(fleet["db"], read_only=True) as store:
        runs = store.sql("SELECT run_id, session_id, input_tokens, output_tokens FROM runs")
    assert len(runs) == len(truth)
    for row in runs.to_dict("records"):
        want = truth[row["run_id"]]
        assert row["session_id"] == want["session_id"]
        assert _same(row["input_tokens"], want["input_tokens"]), row
        assert _same(row["output_tokens"], want["output_tokens"]), row


def test_fleet_calls_carry_own_time_and_tokens(fleet: dict[str, Path]) -> None:
    with Store(fleet["db"], read_only=True) as store:
        differ = store.sql(
            """
            SELECT count(*) AS n FROM fleet_calls f JOIN invocations i
                ON f.invocation_id = i.invocation_id AND f.root_run_id = i.root_run_id
            WHERE f.own_ms IS DISTINCT FROM i.own_ms
               OR f.input_tokens IS DISTINCT FROM i.input_tokens
               OR f.output_tokens IS DISTINCT FROM i.output_tokens
            """
        )
        assert differ.n[0] == 0


def _tree_records() -> list[Event]:
    return [
        RunStart(ts=0, runId="r", agent="front", session="chat-1"),
        enter(0, "a", "A", "r", "lead", edge=EdgeInfo(source="handoff.span")),
        enter(10, "b", "B", "A", "bg", kind="subagent"),
        enter(20, "c", "C", "A", "helper", kind="subagent"),
        exit_(
            50, "b", "B", "A", "bg", 40, usage=Usage(inputTokens=10, outputTokens=5, models=["m1"])
        ),
        exit_(80, "a", "A", "r", "lead", 80, usage=Usage(inputTokens=1, outputTokens=2)),
        exit_(120, "c", "C", "A", "helper", 100, usage=Usage(inputTokens=100)),
        *call(121, 125, "d", "D", "r", "late", usage=Usage(outputTokens=3)),
        RunEnd(ts=130, runId="r", ok=True, durationMs=130),
    ]


def _measures(store: Store) -> dict[str, tuple[object, ...]]:
    rows = store.sql(
        "SELECT invocation_id, own_ms, total_input_tokens, total_output_tokens, edge_source"
        " FROM invocations ORDER BY 1"
    ).to_dict("records")
    return {
        r["invocation_id"]: tuple(
            None if (isinstance(v, float) and math.isnan(v)) or v is None else v
            for v in (
                r["own_ms"],
                r["total_input_tokens"],
                r["total_output_tokens"],
                r["edge_source"],
            )
        )
        for r in rows
    }


_EXPECTED = {
    # lead 0..80: bg 10..50 and helper 20..120 (clipped to 80) cover 10..80.
    "a": (10.0, 111, 7, "handoff.span"),
    "b": (40.0, 10, 5, None),
    "c": (100.0, 100, None, None),
    "d": (4.0, None, 3, None),
}


def test_a_subtree_that_arrives_in_a_later_ingest_updates_the_totals_above(tmp_path: Path) -> None:
    records = _tree_records()
    late = {"b", "c"}
    first = [e for e in records if getattr(e, "invocationId", None) not in late]
    second = [e for e in records if getattr(e, "invocationId", None) in late]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write_jsonl(tmp_path / "one.jsonl", first))
        assert _measures(store)["a"] == (80.0, 1, 2, "handoff.span")
        store.ingest(write_jsonl(tmp_path / "two.jsonl", second))
        assert _measures(store) == _EXPECTED
        run = store.sql("SELECT session_id, input_tokens, output_tokens FROM runs").iloc[0]
        assert (run.session_id, run.input_tokens, run.output_tokens) == ("chat-1", 111, 10)
        calls = store.sql("SELECT invocation_id, own_ms FROM fleet_calls ORDER BY 1")
        assert calls.own_ms.tolist() == [10.0, 40.0, 100.0, 4.0]


def test_a_parent_that_arrives_after_its_subtree_gets_its_totals(tmp_path: Path) -> None:
    records = _tree_records()
    first = [e for e in records if getattr(e, "invocationId", None) != "a"]
    second = [e for e in records if getattr(e, "invocationId", None) == "a"]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write_jsonl(tmp_path / "one.jsonl", first))
        store.ingest(write_jsonl(tmp_path / "two.jsonl", second))
        assert _measures(store) == _EXPECTED


def test_a_store_made_before_the_measures_gets_them_when_it_migrates(tmp_path: Path) -> None:
    trace = write_jsonl(tmp_path / "t.jsonl", _tree_records())
    today = tmp_path / "today.duckdb"
    with Store(today) as store:
        store.ingest(trace)
    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    measures = next(n for n, m in enumerate(MIGRATIONS, start=1) if "own_ms" in m)
    for number, migration in enumerate(MIGRATIONS[: measures - 1], start=1):
        con.execute(migration)
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [number])
    con.execute(f"ATTACH '{today}' AS src (READ_ONLY)")
    for table in ("ingest_log", "events", "invocations", "steps", "runs", "rejects", "fleet_calls"):
        names = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns()"
                " WHERE database_name = current_database() AND table_name = ?",
                [table],
            ).fetchall()
        ]
        cols = ", ".join(names)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM src.{table}")
    con.execute("DETACH src")
    assert "own_ms" not in [r[0] for r in con.execute("DESCRIBE invocations").fetchall()]
    con.close()
    with Store(old) as store:
        assert _measures(store) == _EXPECTED
        run = store.sql("SELECT session_id, input_tokens FROM runs").iloc[0]
        assert (run.session_id, run.input_tokens) == ("chat-1", 111)
        calls = store.sql("SELECT own_ms, input_tokens FROM fleet_calls WHERE invocation_id = 'a'")
        assert (calls.own_ms[0], calls.input_tokens[0]) == (10.0, 1)


def test_a_runs_tokens_count_its_root_agents_own_usage(tmp_path: Path) -> None:
    # The root agent has no exit record: an SDK writes its own usage on run.end.
    records = [
        RunStart(ts=1.0, runId="r", agent="root", session="s1"),
        *call(2.0, 3.0, "a", "r/a", "r", "a", usage=Usage(inputTokens=10, outputTokens=5)),
        RunEnd(ts=4.0, runId="r", ok=True, usage=Usage(inputTokens=100, outputTokens=50)),
    ]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write_jsonl(tmp_path / "t.jsonl", records))
        run = store.sql("SELECT session_id, input_tokens, output_tokens FROM runs").iloc[0]
    assert (run.session_id, run.input_tokens, run.output_tokens) == ("s1", 110, 55)
