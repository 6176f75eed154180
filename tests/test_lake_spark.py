"""The fleet report and the classification on a real Spark (Spark Connect), equal to DuckDB's.

One local Spark Connect server (pyspark's jars on Java 17, loopback, a free
port) serves the whole session; ``pytest -m spark`` runs these alone.
Percentiles are compared to a few units in the last place: both engines
interpolate between the same two order statistics at the same point
(exact, not sketched), but the two engines write the interpolation's
arithmetic differently, which may round differently in the last bit.
Every other number, name and time is compared exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _lake_helpers import (
    NOW,
    classified,
    collected_lake,
    hostile_store,
    report_json,
    simulated_store,
)
from _loops_helpers import loop_store
from _otel_helpers import otel_store

from tracekit.errors import StoreError
from tracekit.fleet import fleet_report
from tracekit.lake import export_lake
from tracekit.lake.classify import classify_lake
from tracekit.lake.engine import open_lake
from tracekit.lake.local import LocalSpark
from tracekit.store import Store

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_PERCENTILES = {"p50_ms", "p95_ms", "p99_ms", "own_p50_ms", "own_p95_ms"}


@pytest.fixture(scope="session")
def spark_remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("spark") / "server.log"
    with LocalSpark(memory="1g", cores=2, shuffle_partitions=2, log=log) as server:
        yield server.remote


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("lakes")
    out = {}
    for name, db in (
        ("simulated", simulated_store(tmp, runs=400, seed=11)),
        ("hostile", hostile_store(tmp)),
        ("otel", otel_store(tmp, runs=150, seed=9)),
        ("loops", loop_store(tmp)),  # the loop cost: its query on Spark too
    ):
        lake = tmp / f"{name}-lake"
        export_lake(db, lake)
        out[name] = (db, lake)
    return out


def _same(duck: Any, spark: Any, where: str = "") -> None:
    """Equal, number for number; percentiles to a few units in the last place."""
    if isinstance(duck, dict):
        assert isinstance(spark, dict) and duck.keys() == spark.keys(), where
        for key in duck:
            if key in _PERCENTILES and duck[key] is not None and spark[key] is not None:
                assert math.isclose(duck[key], spark[key], rel_tol=1e-13), f"{where}.{key}"
            else:
                _same(duck[key], spark[key], f"{where}.{key}")
    elif isinstance(duck, list):
        assert isinstance(spark, list) and len(duck) == len(spark), where
        for n, (a, b) in enumerate(zip(duck, spark, strict=True)):
            _same(a, b, f"{where}[{n}]")
    else:
        assert duck == spark and type(duck) is type(spark), f"{where}: {duck!r} != {spark!r}"


@pytest.mark.parametrize("fleet", ["simulated", "hostile", "otel", "loops"])
def test_the_fleet_report_on_spark_equals_duckdbs(
    spark_remote: str, lakes: dict[str, tuple[Path, Path]], fleet: str
) -> None:
    db, lake = lakes[fleet]
    with Store(db, read_only=True) as store:
        from_store = report_json(fleet_report(store, now=NOW))
        windowed = report_json(fleet_report(store, since="2d", now=NOW))
    on_duckdb = report_json(fleet_report(lake=lake, now=NOW))
    assert on_duckdb == from_store
    assert from_store["runs"] > 0 and from_store["latency"] and from_store["circles"]
    assert fleet != "loops" or len(from_store["loops"]) == 4
    on_spark = report_json(fleet_report(lake=lake, engine="spark", remote=spark_remote, now=NOW))
    spark_windowed = report_json(
        fleet_report(lake=lake, engine="spark", remote=spark_remote, since="2d", now=NOW)
    )
    with open_lake(lake, engine="spark", remote=spark_remote) as spark:
        result = classify_lake(spark)
    _same(on_duckdb, on_spark, fleet)
    _same(windowed, spark_windowed, fleet + "(2d)")
    # The classification: the same classes, origins, circles and roles as the store's.
    truth = classified(db)
    stored = {row[0]: row for row in truth["runs"]}
    outcomes: dict[str, int] = {}
    for row in truth["runs"]:
        outcomes[row[1]] = outcomes.get(row[1], 0) + 1
    assert result.outcomes == outcomes
    for row in result.findings.itertuples(index=False):
        assert tuple(None if v != v else v for v in row) == stored[row.run_id]
    assert [tuple(r) for r in result.roles.itertuples(index=False)] == truth["roles"]
    if fleet == "simulated":
        assert len(outcomes) == 7  # every class present


def test_the_public_call_and_the_command_take_spark(
    spark_remote: str, lakes: dict[str, tuple[Path, Path]]
) -> None:
    from _store_helpers import cli

    db, lake = lakes["simulated"]
    report = fleet_report(lake=lake, engine="spark", remote=spark_remote, service="support-desk")
    with Store(db, read_only=True) as store:
        expected = fleet_report(store, service="support-desk")
    assert report.runs == expected.runs and report.runs > 0
    assert report.tables["edges"].rows == expected.tables["edges"].rows
    done = cli(
        "fleet",
        "--lake",
        str(lake),
        "--engine",
        "spark",
        "--remote",
        spark_remote,
        "--format",
        "json",
    )
    assert '"outcomes"' in done.stdout
    with pytest.raises(StoreError, match="no run has service"):
        fleet_report(lake=lake, engine="spark", remote=spark_remote, service="nope")


def test_an_unreachable_spark_is_one_line(
    tmp_path: Path, lakes: dict[str, tuple[Path, Path]]
) -> None:
    from _store_helpers import cli

    from tracekit.lake.local import free_port

    _, lake = lakes["hostile"]
    done = cli(
        "fleet",
        "--lake",
        str(lake),
        "--engine",
        "spark",
        "--remote",
        f"sc://127.0.0.1:{free_port()}",
        check=False,
    )
    assert (
        done.returncode == 2
        and done.stderr.startswith("Error: Spark at ")
        and "Traceback" not in done.stderr
    )


@pytest.mark.slow
def test_three_collectors_lake_on_spark_equals_one_store(
    spark_remote: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The lake three ``tracekit serve`` exported into while running, read by Spark."""
    collected = collected_lake(tmp_path_factory.mktemp("collectors"))
    assert collected["codes"] == [0, 0, 0], collected["errors"]
    with Store(collected["single"], read_only=True) as store:
        for since in (None, "2d"):
            one = report_json(fleet_report(store, since=since, now=NOW, limit=None))
            spark = fleet_report(
                lake=collected["lake"], since=since, now=NOW, limit=None,
                engine="spark", remote=spark_remote,
            )  # fmt: skip
            _same(one, report_json(spark), f"since={since}")
            paged = fleet_report(
                lake=collected["lake"], since=since, now=NOW, limit=3, offset=2,
                engine="spark", remote=spark_remote,
            )  # fmt: skip
            assert report_json(paged)["degraded"] == one["degraded"][2:5]


def test_a_window_prunes_the_day_partitions_on_spark(
    spark_remote: str, lakes: dict[str, tuple[Path, Path]]
) -> None:
    """Spark's plan for the report's windowed query filters the partitions, not only rows."""
    from datetime import datetime

    from tracekit.fleet import FleetFilter
    from tracekit.lake.engine import SparkLake, to_spark

    _, lake = lakes["simulated"]
    flt = FleetFilter(datetime(2026, 11, 21, 6), datetime(2026, 11, 21, 18), partitioned=True)
    where, params = flt.runs_where()
    spark = SparkLake(lake, spark_remote)
    try:
        sql = to_spark(f"SELECT count(*) FROM runs WHERE {where}", params)
        plan = str(spark.spark.sql(f"EXPLAIN FORMATTED {sql}").collect()[0][0])
    finally:
        spark.close()
    filters = [line for line in plan.splitlines() if "PartitionFilters" in line]
    assert filters and all("2026-11-21" in line for line in filters), plan
