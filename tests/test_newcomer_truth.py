"""Pictures and pages that tell the truth: the why wherever a run is shown, honest rates.

The run page, ``tracekit tree RUN --db`` and a served store's API say the same
why; the delegation graph judges an agent by the failures that began in it
over its own calls (its runs as entry agent included) and fills the width;
the child-failure chart gives its counts and does not let one call's 100%
set the scale; the live page counts spans waiting for their trace's root.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from tests._server_helpers import start
from tests._tree_helpers import ROOT, run_cli
from tracekit import Store
from tracekit.dashboards.fleet_figures import FEW_CALLS, failure_rate_figure
from tracekit.dashboards.graph_layout import layout
from tracekit.store import FleetFilter, origin_failures
from tracekit.store.cause import describe_cause

SAMPLES = ROOT / "sample_traces"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("samples") / "s.duckdb"
    assert (
        run_cli("ingest", *map(str, sorted(SAMPLES.glob("*.jsonl"))), "--db", str(db)).returncode
        == 0
    )
    return db


def test_the_run_page_names_the_agent_that_refused(samples: Path) -> None:
    from tracekit.dashboards.live import run_page

    with Store(samples, read_only=True) as store:
        page = run_page(store, "run-circ")
        cause = store.root_cause("run-circ")
    assert cause is not None and cause.agent == "orders" and cause.depth == 3
    assert 'class="circle">billing -&gt; orders -&gt; billing</span>' in page
    assert "Refused in agent <code>orders</code> at depth 3 (AGENT_RECURSION)" in page


def test_a_served_store_says_the_same_why(samples: Path, tmp_path: Path) -> None:
    from tracekit.server.client import ServerClient

    with Store(samples, read_only=True) as store:
        local = {run: store.root_cause(run) for run in ("run-circ", "run-fail", "run-fail/billing")}
    db = tmp_path / "served.duckdb"
    db.write_bytes(samples.read_bytes())
    server = start(db)
    try:
        client = ServerClient(server.url)
        assert {run: client.root_cause(run) for run in local} == local
        assert local["run-fail/billing"] is None  # a child run: its root has the why
        served = run_cli("tree", "run-circ", "--db", str(db), "--color", "never")
    finally:
        assert server.stop() == 0, server.err
    alone = run_cli("tree", "run-circ", "--db", str(db), "--color", "never")
    assert served.stdout == alone.stdout  # through the API or from the file
    assert served.stdout.splitlines()[-2:] == describe_cause(local["run-circ"])


def test_an_entry_agent_is_judged_over_its_own_runs(tmp_path: Path) -> None:
    """Refused re-entries into an entry agent are few of its calls, not all of them."""
    db = tmp_path / "fleet.duckdb"
    trace = tmp_path / "fleet.jsonl"
    assert run_cli("simulate", "--runs", "400", "--seed", "7", "-o", str(trace)).returncode == 0
    assert run_cli("ingest", str(trace), "--db", str(db)).returncode == 0
    with Store(db, read_only=True) as store:
        rates = origin_failures(store, FleetFilter()).set_index("agent")
        entries = store.con.execute("SELECT agent, count(*) FROM runs GROUP BY agent").fetchall()
        called = store.con.execute(
            "SELECT agent, count(*) FROM invocations WHERE root_run_id IS NOT NULL GROUP BY agent"
        ).fetchall()
    calls = dict(called)
    for agent, runs in entries:
        assert rates.loc[agent, "calls"] == runs + calls.get(agent, 0), agent
        assert rates.loc[agent, "origins"] / rates.loc[agent, "calls"] < 0.5, agent


def test_the_graph_spreads_its_groups_over_the_width() -> None:
    pairs = [("desk", "billing"), ("billing", "refunds"), ("planner", "critic"), ("sql", "docs")]
    placed = layout(pairs, width=1000)
    assert placed.width == pytest.approx(1000)
    left = min(b.x - b.w / 2 for b in placed.boxes.values())
    right = max(b.x + b.w / 2 for b in placed.boxes.values())
    assert left > 0 and right - left > 0.75 * 1000  # spread, not packed from the left edge
    assert left == pytest.approx(1000 - right, abs=1)  # the spare width on both sides


def test_child_failure_rates_carry_counts_and_mark_small_samples() -> None:
    frame = pd.DataFrame(
        {
            "outcome": "failed:child",
            "origin_agent": ["billing", "refunds", "lonely"],
            "origin_code": ["TIMEOUT", "TIMEOUT", "BOOM"],
            "runs": [30, 12, 1],
            "rate": [30 / 600, 12 / 400, 1.0],  # lonely: one call, which failed
        }
    )
    fig = failure_rate_figure(frame)
    names = list(fig.data[0].y)
    assert names == [
        "lonely · 1 of 1 call, few",
        "refunds · 12 of 400 calls",
        "billing · 30 of 600 calls",
    ]
    assert fig.layout.xaxis.range[1] == pytest.approx(0.05 * 1.15)  # set by the sure ones
    assert f"fewer than {FEW_CALLS} calls" in fig.layout.title.text
    faint = [bar.marker.opacity for bar in fig.data]
    assert all(tuple(o) == (0.35, 1.0, 1.0) for o in faint)


def test_the_incomplete_card_counts_spans_waiting_for_their_root(tmp_path: Path) -> None:
    from tests._server_helpers import post

    server = start(tmp_path / "live.duckdb")
    try:
        child = {
            "traceId": "ab" * 16,
            "spanId": "cd" * 8,
            "parentSpanId": "ef" * 8,  # a root that has not arrived
            "name": "invoke_agent billing",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": "billing"}},
            ],
        }
        body = {"resourceSpans": [{"scopeSpans": [{"spans": [child]}]}]}
        status, _, _ = post(
            server.url + "/v1/traces",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        assert status == 200
        deadline = time.monotonic() + 60
        while json.loads(server.get("/api/ingest")[1])["pending_spans"] < 1:
            assert time.monotonic() < deadline, "the span was never held"
            time.sleep(0.1)
        page = json.loads(server.get("/api/live")[1])["html"]
    finally:
        assert server.stop() == 0, server.err
    assert "1 span is waiting for their trace's root" in page


def test_the_incomplete_card_shows_waiting_spans_beside_its_runs(samples: Path) -> None:
    from tracekit.dashboards.sections import cards
    from tracekit.fleet import fleet_report

    with Store(samples, read_only=True) as store:
        report = fleet_report(store)
        shown = cards(report, waiting=198)
        plain = cards(report)
    incomplete = shown.split(">incomplete<", 1)[1].split('<div class="card"', 1)[0]
    assert "+ 198 spans are waiting for their trace's root" in incomplete
    assert "waiting" not in plain
