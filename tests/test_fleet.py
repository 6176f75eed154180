"""Fleet metrics over a store of hand-made runs in two windows."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from _fleet_helpers import T0, deep_failure, handled, healthy, recursion, refused, write

from tracekit.fleet import (
    FleetFilter,
    agent_latency,
    delegation_edges,
    fleet_report,
    outcomes_over_time,
    recursion_circles,
    worst_runs,
)
from tracekit.fleet.frames import to_frame
from tracekit.store import Store, fetch

NOW = datetime.fromtimestamp((T0 + 2 * 3_600_000) / 1000, UTC)  # two hours after T0
HOUR = 3_600_000.0


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fleetdb")
    before = T0 + 10 * 60_000  # in the previous hour
    now = T0 + HOUR + 10 * 60_000  # in the last hour
    events = (
        healthy("old-ok", t0=before)
        + deep_failure("old-deep", t0=before + 1000)
        + recursion("new-rec", ["orders", "billing"], t0=now, service="orders-svc")
        + deep_failure("new-deep", t0=now + 1000)
        + handled("new-handled", t0=now + 2000)
        + healthy("new-ok", t0=now + 3000)
        + refused("new-refused", t0=now + 4000)
    )
    path = base / "s.duckdb"
    with Store(path) as store:
        store.ingest(write(base / "fleet.jsonl", events))
    return path


def test_report_counts_outcomes_and_compares_with_the_previous_hour(db: Path) -> None:
    with Store(db) as store:  # writable: the report classifies first
        report = fleet_report(store, since="1h", now=NOW)
    shares = report.outcomes.set_index("outcome")
    assert report.runs == 5 and report.previous_runs == 2
    assert shares.loc["failed:recursion", "runs"] == 1
    assert shares.loc["degraded", "runs"] == 1
    assert (
        shares.loc["failed:child", "runs"] == 1 and shares.loc["failed:child", "previous_runs"] == 1
    )
    assert shares.loc["ok", "share"] == pytest.approx(0.2)
    assert shares.loc["ok", "change"] == pytest.approx(0.2 - 0.5)
    assert report.incomplete == {"crashed": 0, "running": 0}


def test_circles_flagged_with_services_and_times_even_once(db: Path) -> None:
    with Store(db) as store:
        report = fleet_report(store, since="1h", now=NOW)
    [circle] = report.circles.to_dict(orient="records")
    assert circle["circle"] == "billing -> orders -> billing"
    assert (circle["runs"], circle["failed"], circle["services"]) == (1, 1, "orders-svc")
    assert circle["action"] and circle["new"]
    assert circle["first_seen"] == circle["last_seen"]


def test_failures_by_origin_with_rates(db: Path) -> None:
    with Store(db) as store:
        report = fleet_report(store, since="1h", now=NOW)
    rows = {
        (r["origin_agent"], r["origin_code"]): r for r in report.failures.to_dict(orient="records")
    }
    assert set(rows) == {("invoices", "TIMEOUT"), ("payments", "AGENT_NOT_REGISTERED")}
    assert rows["invoices", "TIMEOUT"]["outcome"] == "failed:child"
    assert rows["invoices", "TIMEOUT"]["share"] == pytest.approx(1 / 5)
    assert rows["invoices", "TIMEOUT"]["rate"] == pytest.approx(
        1.0
    )  # one call to invoices, it failed
    assert report.degraded["run_id"].tolist() == ["new-handled"]
    assert report.degraded["origin_agent"].tolist() == ["refunds"]


def test_latency_and_edges(db: Path) -> None:
    with Store(db) as store:
        flt = FleetFilter.make("1h", now=NOW)
        latency = agent_latency(store, flt).set_index("agent")
        edges = delegation_edges(store, flt)
    assert "payments" not in latency.index  # refused: it never ran
    assert latency.loc["billing", "calls"] == 5
    assert (
        latency.loc["billing", "p50_ms"]
        <= latency.loc["billing", "p95_ms"]
        <= latency.loc["billing", "p99_ms"]
    )
    pairs = {(r["caller"], r["callee"]): r for r in edges.to_dict(orient="records")}
    assert pairs["desk", "billing"]["calls"] == 4 and pairs["orders", "billing"]["calls"] == 1
    assert pairs["billing", "orders"]["failed"] == 1 and pairs["billing", "orders"]["refused"] == 1
    assert pairs["billing", "payments"]["failure_rate"] == 1.0


def test_filters_service_and_agent(db: Path) -> None:
    with Store(db) as store:
        by_service = fleet_report(store, service="orders-svc", now=NOW)
        by_agent = fleet_report(store, agent="invoices", now=NOW)
        latency = agent_latency(store, FleetFilter(agent="invoices"))
    assert by_service.runs == 1 and by_service.previous_runs is None
    assert set(by_agent.degraded["run_id"]) == set()
    assert by_agent.runs == 2  # the two deep failures reached invoices
    assert latency["agent"].tolist() == ["invoices"]


def test_over_time_and_worst_runs(db: Path) -> None:
    with Store(db) as store:
        over = outcomes_over_time(store)
        worst = worst_runs(store)
        circles = recursion_circles(store, FleetFilter.make("1h", now=NOW).previous())
    assert over["runs"].sum() == 7
    assert worst["run_id"].iloc[0] == "new-rec"  # circles first
    assert circles.empty


def test_to_dict_is_plain_json(db: Path) -> None:
    with Store(db) as store:
        data = fleet_report(store, since="1h", now=NOW).to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text)["circles"][0]["circle"] == "billing -> orders -> billing"
    assert data["window"]["start"].endswith("Z")


def test_the_join_agrees_with_fleet_calls(db: Path) -> None:
    from tracekit.store import calls_source
    from tracekit.store.classify import classify_store

    with Store(db, read_only=True) as store:
        assert calls_source(store.con) == "fleet_calls"
        kept = delegation_edges(store).to_dict(orient="records")
    with Store(db) as store:
        store.con.execute("UPDATE runs SET classified_at = NULL")  # fleet_calls is stale
        assert calls_source(store.con) != "fleet_calls"  # so the report joins on the fly
        joined = delegation_edges(store).to_dict(orient="records")
        classify_store(store)
        rebuilt = delegation_edges(store).to_dict(orient="records")
    assert kept == joined == rebuilt


def test_report_tables_equal_the_functions_one_by_one(db: Path) -> None:
    """The report reads both windows in one scan; each table must equal its own query."""
    from tracekit.fleet import child_failures, degraded_runs, incomplete_states, outcome_shares

    with Store(db) as store:
        for kw in ({"since": "1h"}, {"agent": "billing"}, {"service": "orders-svc", "since": "2h"}):
            report = fleet_report(store, now=NOW, **kw)  # type: ignore[arg-type]
            flt = report.filter
            pairs = [
                (report.outcomes[["outcome", "runs", "share"]], outcome_shares(store, flt)),
                (report.circles.drop(columns="new"), recursion_circles(store, flt)),
                (report.failures, child_failures(store, flt)),
                (report.degraded, degraded_runs(store, flt)),
                (report.latency, agent_latency(store, flt)),
                (report.edges, delegation_edges(store, flt)),
            ]
            for got, alone in pairs:
                pd.testing.assert_frame_equal(got, alone)
            assert report.incomplete == incomplete_states(store, flt, now=NOW)
            if report.previous_runs is not None:
                before = outcome_shares(store, flt.previous())
                assert report.outcomes["previous_runs"].tolist() == before["runs"].tolist()
                assert report.previous_runs == before["runs"].sum()


def test_rows_become_the_frames_duckdb_would_give() -> None:
    """The report fetches tuples (no pandas); its DataFrames are typed as ``.df()`` types them."""
    con = duckdb.connect()
    sql = """
        SELECT * FROM (VALUES
            (1::BIGINT, NULL::BIGINT, 2::INTEGER, 1.5::DOUBLE, 'a', NULL::VARCHAR,
             TIMESTAMP '2026-01-05 08:00:00.009', TRUE, NULL::TIMESTAMP),
            (2, 3, NULL, NULL, NULL, NULL, NULL, FALSE, NULL)
        ) t(n, maybe_n, small, x, name, nothing, seen, flag, never)
    """
    for query in (sql, sql + " LIMIT 1", sql + " WHERE false"):
        got = to_frame(fetch(con, query))
        pd.testing.assert_frame_equal(got, con.execute(query).df(), check_exact=True)
    con.close()


def test_the_fleet_command_imports_no_pandas(db: Path) -> None:
    """Half of a short command's time was importing pandas and pyarrow: the report needs neither."""
    with Store(db) as store:
        fleet_report(store)  # classified: classifying new runs is the one step that uses pandas
    script = str(Path(sys.executable).parent / "tracekit")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", script, "fleet", "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["runs"] == 7
    imported = {line.rpartition("|")[2].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "duckdb" in imported and "tracekit" in imported  # the list is real
    assert imported & {"pandas", "numpy", "pyarrow", "plotly", "opentelemetry", "rich"} == set()
