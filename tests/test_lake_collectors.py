"""Many collectors, one lake: three ``tracekit serve`` exporting while they run, one report.

Three real servers on loopback, each ``--lake`` into the same folder every
second; tracekit's router spreads a fleet's traces over them by trace id
(one run sent in two halves, apart in time); the lake's report equals that
of one store fed everything. Spark's side is in ``test_lake_spark.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _lake_helpers import NOW, collected_lake, report_json, simulated_store
from _store_helpers import cli

from tracekit.fleet import fleet_report
from tracekit.lake.export import writer_manifests
from tracekit.server.route import TraceRouter
from tracekit.store import Store

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return collected_lake(tmp_path_factory.mktemp("collectors"))


def test_three_collectors_exporting_into_one_lake_report_as_one_store(
    collected: dict[str, Any],
) -> None:
    assert collected["codes"] == [0, 0, 0], collected["errors"]
    lake: Path = collected["lake"]
    assert sorted(writer_manifests(lake)) == ["c0", "c1", "c2"]
    assert len(collected["sent"]) == 3 and min(collected["sent"].values()) > 0
    with Store(collected["single"], read_only=True) as store:
        for since in (None, "2d"):
            one = report_json(fleet_report(store, since=since, now=NOW, limit=None))
            many = report_json(fleet_report(lake=lake, since=since, now=NOW, limit=None))
            assert many == one and one["runs"] > 0


def test_a_run_sent_in_two_halves_reaches_one_collector_and_is_exported_whole(
    collected: dict[str, Any],
) -> None:
    first, second = collected["halves"]
    assert list(first) == list(second)  # both halves to the same collector
    # The lake held the run while it was half sent (exported as it ran), then whole.
    assert collected["first_seen"] == "incomplete"
    with Store(collected["single"], read_only=True) as store:
        [(outcome,)] = store.con.execute(
            "SELECT outcome FROM runs WHERE run_id = ?", [collected["split_run"]]
        ).fetchall()
    from tracekit.lake.engine import duckdb_lake

    con = duckdb_lake(collected["lake"])
    assert con.execute(
        "SELECT outcome FROM runs WHERE run_id = ?", [collected["split_run"]]
    ).fetchall() == [(outcome,)]
    con.close()


def test_the_router_keeps_each_trace_on_one_collector_and_splits_otlp_by_trace() -> None:
    router = TraceRouter([f"http://127.0.0.1:{p}" for p in (1, 2, 3)])
    ids = [f"{n:032x}" for n in range(300)]
    chosen = {router.pick(i) for i in ids}
    assert chosen == set(router.endpoints)  # every collector gets a share
    fewer = TraceRouter(router.endpoints[:2])
    moved = [i for i in ids if router.pick(i) != fewer.pick(i)]
    assert all(router.pick(i) == router.endpoints[2] for i in moved)  # only the removed one's
    spans = [{"traceId": i, "spanId": f"{n:016x}"} for n, i in enumerate(ids[:40] * 2)]
    doc = {"resourceSpans": [{"resource": {"a": 1}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    parts = router.split_otlp(doc)
    back = [
        s
        for p in parts.values()
        for r in p["resourceSpans"]
        for c in r["scopeSpans"]
        for s in c["spans"]
    ]
    assert sorted(back, key=json.dumps) == sorted(spans, key=json.dumps)
    for endpoint, part in parts.items():
        got = {
            s["traceId"] for r in part["resourceSpans"] for c in r["scopeSpans"] for s in c["spans"]
        }
        assert all(router.pick(t) == endpoint for t in got)


def test_serve_refuses_a_bad_export_interval_in_one_line(tmp_path: Path) -> None:
    done = cli(
        "serve", "--db", str(tmp_path / "s.duckdb"), "--port", "0",
        "--lake", str(tmp_path / "lake"), "--export-every", "soon",
        check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("Error: --export-every 'soon': not an interval")


def test_two_stores_export_into_one_lake_by_the_command_and_read_as_one(tmp_path: Path) -> None:
    a = simulated_store(tmp_path, runs=80, seed=31, window=1)
    b = simulated_store(tmp_path, runs=90, seed=32, window=1)
    lake = tmp_path / "lake"
    for db, writer in ((a, "east"), (b, "west")):
        assert (
            "as writer " + writer
            in cli("export", "--db", str(db), "--to", str(lake), "--writer", writer).stderr
        )
    again = cli("export", "--db", str(a), "--to", str(lake), "--writer", "east").stderr
    assert "0 partitions written" in again  # incremental per writer: the other's files unseen
    data = json.loads(cli("fleet", "--lake", str(lake), "--format", "json").stdout)
    runs = [
        json.loads(cli("fleet", "--db", str(db), "--format", "json").stdout)["runs"]
        for db in (a, b)
    ]
    assert data["runs"] == sum(runs) == 170
