"""Root agents' own model usage in "Tokens by agent": SDK and OTLP runs, store, lake, migration.

A root agent has no exit record: its own usage rides on ``run.end`` (the SDK
writes it; the OTLP reader puts there the root span's model calls). The
tokens table lists it under the root agent's name, and the table summed over
agents is the runs' totals. The usage each run's code reported is kept by the
test as the code runs, never read back from the store.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from _store_helpers import cli
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracekit.fleet import fleet_report
from tracekit.lake import export_lake
from tracekit.sdk import AgentTracer, JsonlSink
from tracekit.simulation.otel_apps import Apps
from tracekit.simulation.otel_export import otlp_json_lines
from tracekit.store import Store
from tracekit.store.schema import MIGRATIONS

Usage = Counter[str]


def _sdk_trace(path: Path, runs: int) -> tuple[Usage, Usage]:
    """SDK runs: planner (root) thinks, then sql thinks; returns own (in, out) by agent."""
    tokens_in: Usage = Counter()
    tokens_out: Usage = Counter()
    tk = AgentTracer(JsonlSink(path))

    def think(agent: str, n: int, k: int) -> None:
        tk.usage(input_tokens=n, output_tokens=k, model="gpt-x")
        tokens_in[agent] += n
        tokens_out[agent] += k

    with tk:
        for n in range(runs):
            with tk.run("planner"):
                think("planner", 1000 + n, 100)
                think("planner", 500, 50)
                with tk.invoke("sql", node="delegate"):
                    think("sql", 10 + n, 1)
            with tk.run("quiet"), tk.invoke("sql", node="delegate"):  # a root with no usage
                think("sql", 7, 2)
    return tokens_in, tokens_out


def _otel_trace(path: Path, runs: int) -> tuple[Usage, Usage]:
    """Plain-OTel runs: desk (root) makes model calls and delegates to refunds, which does too."""
    tokens_in: Usage = Counter()
    tokens_out: Usage = Counter()
    exporter = InMemorySpanExporter()
    apps = Apps(exporter, services=("desk", "billing"))

    def model(service: str, agent: str, n: int, k: int) -> None:
        apps.model(service, n, k)
        tokens_in[agent] += n
        tokens_out[agent] += k

    def refunds() -> None:
        model("billing", "refunds", 40, 4)

    for n in range(runs):

        def desk(n: int = n) -> None:
            model("desk", "desk", 300 + n, 30)
            apps.agent("billing", "refunds", refunds)
            model("desk", "desk", 200, 20)

        apps.run("desk", "desk", desk)
    path.write_text("\n".join(otlp_json_lines(exporter.get_finished_spans())) + "\n")
    return tokens_in, tokens_out


def _ingested(tmp: Path, name: str, trace: Path) -> Path:
    db = tmp / f"{name}.duckdb"
    cli("ingest", str(trace), db=db)
    return db


def _tokens_of(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {r["agent"]: (r["input_tokens"], r["output_tokens"]) for r in doc["tokens"]}


def _run_totals(db: Path) -> tuple[int, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT sum(input_tokens), sum(output_tokens) FROM runs").fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), int(row[1])


def _parts_differ(db: Path) -> list[Any]:
    """Runs whose total is not their root agent's own usage plus their invocations' own."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            """
            SELECT r.run_id FROM runs r LEFT JOIN invocations i ON i.root_run_id = r.run_id
            GROUP BY r.run_id, r.input_tokens, r.own_input_tokens
            HAVING r.input_tokens IS DISTINCT FROM CASE
                WHEN r.own_input_tokens IS NOT NULL OR count(i.input_tokens) > 0
                THEN coalesce(r.own_input_tokens, 0) + coalesce(sum(i.input_tokens), 0) END
            """
        ).fetchall()
    finally:
        con.close()


def _expected(tokens_in: Usage, tokens_out: Usage) -> dict[str, tuple[int, int]]:
    return {agent: (tokens_in[agent], tokens_out[agent]) for agent in tokens_in}


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[int, int]]]:
    tmp = tmp_path_factory.mktemp("sdk-tokens")
    trace = tmp / "sdk.jsonl"
    usage = _sdk_trace(trace, runs=6)
    return _ingested(tmp, "sdk", trace), _expected(*usage)


@pytest.fixture(scope="module")
def otel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[int, int]]]:
    tmp = tmp_path_factory.mktemp("otel-tokens")
    trace = tmp / "otel.otlp.jsonl"
    usage = _otel_trace(trace, runs=5)
    return _ingested(tmp, "otel", trace), _expected(*usage)


@pytest.mark.parametrize("path", ["sdk", "otel"])
def test_the_root_agent_has_its_own_row_and_the_rows_sum_to_the_runs_totals(
    path: str, request: pytest.FixtureRequest
) -> None:
    db, expected = request.getfixturevalue(path)
    doc = json.loads(cli("fleet", "--format", "json", db=db).stdout)
    tokens = _tokens_of(doc)
    assert tokens == expected
    root = "planner" if path == "sdk" else "desk"
    assert doc["tokens"][0]["agent"] == root  # the biggest spender heads the table
    total_in = sum(i for i, _ in tokens.values())
    total_out = sum(o for _, o in tokens.values())
    assert (total_in, total_out) == _run_totals(db)
    assert _parts_differ(db) == []  # docs/store.md: a run's total is exactly its parts
    text = cli("fleet", "--color", "never", db=db).stdout
    table = text[text.index("Tokens by agent") :]
    assert f"{expected[root][0]:,}" in table


def test_a_root_agents_calls_are_its_runs_that_reported_usage(
    sdk: tuple[Path, dict[str, tuple[int, int]]],
) -> None:
    db, _ = sdk
    rows = {
        r["agent"]: r for r in json.loads(cli("fleet", "--format", "json", db=db).stdout)["tokens"]
    }
    assert rows["planner"]["calls"] == 6  # one per run: its two model calls summed
    assert rows["planner"]["median_input_tokens"] == 1500 + 2.5
    assert "quiet" not in rows  # a root agent that made no model call is left out
    assert rows["sql"]["calls"] == 12


def test_the_agent_filter_keeps_the_root_agents_own_row(
    otel: tuple[Path, dict[str, tuple[int, int]]],
) -> None:
    db, expected = otel
    doc = json.loads(cli("fleet", "--format", "json", "--agent", "desk", db=db).stdout)
    assert _tokens_of(doc) == {"desk": expected["desk"]}
    doc = json.loads(cli("fleet", "--format", "json", "--agent", "refunds", db=db).stdout)
    assert _tokens_of(doc) == {"refunds": expected["refunds"]}


def test_the_dashboard_lists_the_root_agent(
    sdk: tuple[Path, dict[str, tuple[int, int]]], tmp_path: Path
) -> None:
    db, expected = sdk
    out = tmp_path / "d.html"
    cli("dashboard", "--out", str(out), db=db)
    page = out.read_text()
    tokens = page[page.index("Tokens by agent") :]
    assert ">planner<" in tokens and f">{expected['planner'][0]:,}<" in tokens


@pytest.mark.parametrize("path", ["sdk", "otel"])
def test_the_lake_on_duckdb_has_the_same_tokens_table(
    path: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    db, expected = request.getfixturevalue(path)
    export_lake(db, tmp_path / "lake")
    on_lake = fleet_report(lake=tmp_path / "lake").tables["tokens"]
    with Store(db, read_only=True) as store:
        on_store = fleet_report(store).tables["tokens"]
    assert on_lake.rows == on_store.rows
    assert {r["agent"]: (r["input_tokens"], r["output_tokens"]) for r in on_lake.records()} == (
        expected
    )


def test_a_store_made_before_the_root_usage_column_gets_it_when_it_migrates(
    sdk: tuple[Path, dict[str, tuple[int, int]]], tmp_path: Path
) -> None:
    db, expected = sdk
    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    added = next(n for n, m in enumerate(MIGRATIONS, start=1) if "own_input_tokens" in m)
    for number, migration in enumerate(MIGRATIONS[: added - 1], start=1):
        con.execute(migration)
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [number])
    con.execute(f"ATTACH '{db}' AS src (READ_ONLY)")
    for table in ("ingest_log", "events", "invocations", "steps", "runs", "fleet_calls", "closure"):
        cols = ", ".join(r[0] for r in con.execute(f"DESCRIBE {table}").fetchall())
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM src.{table}")
    con.execute("DETACH src")
    # As the measures' backfill left it: the runs' totals without the root's own usage.
    con.execute(
        "UPDATE runs SET input_tokens = (SELECT sum(input_tokens) FROM invocations i"
        " WHERE i.root_run_id = runs.run_id)"
    )
    con.close()
    with Store(old) as store:
        assert _tokens_of({"tokens": fleet_report(store).tables["tokens"].records()}) == expected
    assert _run_totals(old) == _run_totals(db)


def test_a_lake_written_before_the_root_usage_columns_still_reports(
    otel: tuple[Path, dict[str, tuple[int, int]]], tmp_path: Path
) -> None:
    """Its runs lack the columns: the root agents' own rows are missing, nothing fails."""
    db, expected = otel
    lake = tmp_path / "lake"
    export_lake(db, lake, writer="old")
    con = duckdb.connect()
    for part in (lake / "runs").glob("*/*/*.parquet"):
        con.execute(
            f"COPY (SELECT * EXCLUDE (own_input_tokens, own_output_tokens)"
            f" FROM read_parquet('{part}')) TO '{part}.x' (FORMAT parquet)"
        )
        Path(f"{part}.x").replace(part)
    con.close()
    manifest = lake / "_writers" / "old.json"
    doc = json.loads(manifest.read_text())
    runs = doc["tables"]["runs"]
    runs["columns"] = [c for c in runs["columns"] if not c[0].startswith("own_")]
    manifest.write_text(json.dumps(doc))
    rows = fleet_report(lake=lake).tables["tokens"].records()
    assert {r["agent"]: r["input_tokens"] for r in rows} == {"refunds": expected["refunds"][0]}
