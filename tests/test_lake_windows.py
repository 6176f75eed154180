"""Windows over a lake: the report's filters constrain the day partitions, so files outside the
window are never opened (DuckDB's own scan counts say so), and the answer stays the store's."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from _lake_helpers import NOW, report_json, simulated_store

from tracekit.fleet import FleetFilter, fleet_report
from tracekit.lake import export_lake
from tracekit.lake.engine import duckdb_lake
from tracekit.store import Store


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("windows")
    db = simulated_store(tmp, runs=300, seed=13, window=3)
    export_lake(db, tmp / "lake", writer="w")
    return db, tmp / "lake"


def _files_read(lake: Path, table: str, where: str, params: list[object]) -> int:
    con = duckdb_lake(lake)
    try:
        plan = con.execute(f"EXPLAIN ANALYZE SELECT count(*) FROM {table} WHERE {where}", params)
        text = "".join(str(row[1]) for row in plan.fetchall())
    finally:
        con.close()
    return sum(int(n) for n in re.findall(r"Total Files Read: (\d+)", text))


def test_a_one_day_window_opens_only_that_days_files(lake: tuple[Path, Path]) -> None:
    _, folder = lake
    every = len(list((folder / "runs").glob("*/*/*.parquet")))
    flt = FleetFilter(datetime(2026, 11, 21, 6), datetime(2026, 11, 21, 18), partitioned=True)
    day = len(list((folder / "runs").glob("day=2026-11-21/*/*.parquet")))
    assert 0 < day < every
    for table, (where, params) in (
        ("runs", flt.runs_where()),
        ("fleet_calls", flt.calls_where("fleet_calls")),
    ):
        assert _files_read(folder, table, where, params) == day, table
        unpruned = replace(flt, partitioned=False)
        where, params = unpruned.runs_where() if table == "runs" else unpruned.calls_where(table)
        assert _files_read(folder, table, where, params) == every, table


@pytest.mark.parametrize(
    ("since", "service"), [("1d", None), ("36h", None), ("2026-11-21T00:00:00", "data-desk")]
)
def test_windowed_and_service_reports_from_the_lake_equal_the_stores(
    lake: tuple[Path, Path], since: str, service: str | None
) -> None:
    db, folder = lake
    now = datetime(2026, 11, 22, 9, 30) if since != "1d" else NOW
    with Store(db, read_only=True) as store:
        expected = report_json(fleet_report(store, since=since, service=service, now=now))
    got = report_json(fleet_report(lake=folder, since=since, service=service, now=now))
    assert got == expected and (expected["runs"] > 0 or since == "1d")
