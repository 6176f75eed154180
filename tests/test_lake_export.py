"""tracekit export: the lake's layout, round trip, incremental writes, crashes, hostile names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from _lake_helpers import (
    HOSTILE_SERVICES,
    NOW,
    classified,
    hostile_store,
    report_json,
    simulate,
    simulated_store,
    store_counts,
)
from _store_helpers import TRACEKIT, cli

from tracekit.errors import LakeError
from tracekit.fleet import fleet_report
from tracekit.lake import export_lake
from tracekit.lake.classify import classify_lake
from tracekit.lake.engine import duckdb_lake, lake_tables
from tracekit.lake.layout import MANIFEST
from tracekit.store import Store


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_store(tmp_path_factory.mktemp("sim"))


def _files(lake: Path) -> dict[str, tuple[int, int]]:
    """Every data file of the lake: (inode, mtime) by path, to tell a rewrite."""
    return {
        str(p.relative_to(lake)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in lake.glob("*/*/*/*.parquet")
    }


def _lake_counts(lake: Path) -> dict[str, int]:
    con = duckdb_lake(lake)
    try:
        return {
            t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            for t in lake_tables(lake)
        }
    finally:
        con.close()


def test_the_lake_holds_every_row_in_one_zstd_file_a_partition(
    sim_db: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    report = export_lake(sim_db, lake, writer="collector-a")
    assert _lake_counts(lake) == store_counts(sim_db)
    assert report.rows == sum(store_counts(sim_db).values())
    for folder in lake.glob("*/day=*/service=*"):
        [file] = folder.iterdir()
        assert file.name == "collector-a.parquet"
        meta = pq.ParquetFile(file).metadata
        assert meta.row_group(0).column(0).compression == "ZSTD"
    days = {p.name for p in lake.glob("runs/day=*")}
    assert days == {"day=2026-11-20", "day=2026-11-21", "day=2026-11-22"}
    assert not (lake / "_staging").exists()


def test_every_column_of_the_store_is_in_the_lake(sim_db: Path, tmp_path: Path) -> None:
    """Columns are read from the store's tables, so those other schemas add flow through."""
    lake = tmp_path / "lake"
    export_lake(sim_db, lake)
    con = duckdb.connect(str(sim_db), read_only=True)
    for table, columns in lake_tables(lake).items():
        stored = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        files = list(lake.glob(f"{table}/*/*/*.parquet"))
        if not files:  # a table the simulated fleet leaves empty (loops): no partition
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
            assert {c for c, _ in columns} == set(stored) | {"day", "service"}
            continue
        exported = pq.ParquetFile(files[0]).schema_arrow.names
        assert set(stored) - {"service"} == set(exported), table
        assert {c for c, _ in columns} == set(stored) | {"day", "service"}


def test_round_trip_the_report_from_the_lake_is_the_stores(sim_db: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    cli("export", "--db", str(sim_db), "--to", str(lake))
    from_store = cli("fleet", "--format", "json", db=sim_db).stdout
    from_lake = cli("fleet", "--lake", str(lake), "--format", "json").stdout
    assert from_lake == from_store
    with Store(sim_db, read_only=True) as store:
        for kw in (
            {"since": "36h"},
            {"since": "2d", "service": "billing-api"},
            {"agent": "critic"},
        ):
            try:
                expected = report_json(fleet_report(store, now=NOW, **kw))
            except Exception as exc:  # a service the fleet lacks: the lake refuses it too
                with pytest.raises(type(exc)):
                    fleet_report(lake=lake, now=NOW, **kw)
                continue
            assert report_json(fleet_report(lake=lake, now=NOW, **kw)) == expected


def test_the_classification_over_the_lake_is_the_stores(sim_db: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(sim_db, lake)
    truth = classified(sim_db)
    con = duckdb_lake(lake)
    result = classify_lake(con)
    outcomes: dict[str, int] = {}
    for _, outcome, *_rest in truth["runs"]:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert result.outcomes == outcomes
    assert len(outcomes) == 7  # every class is present
    stored = {row[0]: row for row in truth["runs"]}
    for row in result.findings.itertuples(index=False):
        assert tuple(None if v != v else v for v in row) == stored[row.run_id]
    assert [tuple(r) for r in result.roles.itertuples(index=False)] == truth["roles"]


def test_the_plain_otel_classification_over_the_lake_is_the_stores(tmp_path: Path) -> None:
    """The evidence and structure rules on DuckDB over the lake: the store's very answers."""
    from _otel_helpers import otel_store

    db = otel_store(tmp_path, runs=150, seed=9)
    lake = tmp_path / "lake"
    export_lake(db, lake)
    truth = classified(db)
    result = classify_lake(duckdb_lake(lake))
    stored = {row[0]: row for row in truth["runs"]}
    assert {"failed:recursion", "failed:child", "degraded"} <= set(result.outcomes)
    for row in result.findings.itertuples(index=False):
        assert tuple(None if v != v else v for v in row) == stored[row.run_id]
    assert [tuple(r) for r in result.roles.itertuples(index=False)] == truth["roles"]
    assert {r for _, r in truth["roles"]} == {"origin", "wrapped"}


def test_a_second_export_writes_only_new_and_changed_partitions(tmp_path: Path) -> None:
    db = simulated_store(tmp_path, runs=200, seed=5, window=2)
    lake = tmp_path / "lake"
    export_lake(db, lake)
    before = _files(lake)
    again = export_lake(db, lake)
    assert again.written == 0 and _files(lake) == before
    # A day later: new runs on a new day (new partitions) and nothing else touched.
    late = tmp_path / "late.jsonl"
    simulate(late, runs=50, seed=9, start="2026-11-25T00:00:00Z", window_ms=3_600_000.0)
    with Store(db) as store:
        store.ingest(late)
    third = export_lake(db, lake)
    after = _files(lake)
    new = set(after) - set(before)
    assert new and all("day=2026-11-25" in p for p in new)
    assert {p: after[p] for p in before} == before  # the old partitions' files untouched
    assert third.written == len(new)
    assert _lake_counts(lake) == store_counts(db)


def test_a_changed_partition_is_rewritten_and_a_gone_one_removed(tmp_path: Path) -> None:
    db = simulated_store(tmp_path, runs=120, seed=6, window=2)
    lake = tmp_path / "lake"
    export_lake(db, lake)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE runs SET error_message = 'edited' WHERE run_id = (SELECT min(run_id) FROM runs)"
    )
    con.execute("DELETE FROM steps WHERE ts_ms < (SELECT min(ts_ms) + 3600000 FROM steps)")
    con.close()
    report = export_lake(db, lake)
    assert report.tables["runs"].written == 1
    assert report.tables["steps"].written + report.tables["steps"].removed >= 1
    assert report.tables["events"].written == 0
    assert _lake_counts(lake) == store_counts(db)


def _fail_after(n: int):  # type: ignore[no-untyped-def]
    real = os.replace
    calls = {"n": 0}

    def replace(src: object, dst: object) -> None:
        if str(dst).endswith(".parquet"):
            calls["n"] += 1
            if calls["n"] > n:
                raise OSError(28, "No space left on device")
        real(src, dst)  # type: ignore[arg-type]

    return replace


def test_a_failure_mid_export_leaves_the_lake_readable_and_the_next_export_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = simulated_store(tmp_path, runs=150, seed=8, window=2)
    lake = tmp_path / "lake"
    export_lake(db, lake)
    good = report_json(fleet_report(lake=lake, now=NOW))
    con = duckdb.connect(str(db))
    con.execute("UPDATE invocations SET error_message = coalesce(error_message, '') || '!'")
    con.close()
    monkeypatch.setattr("tracekit.lake.export.os.replace", _fail_after(2))
    with pytest.raises(LakeError, match="No space left"):
        export_lake(db, lake)
    monkeypatch.undo()
    for file in lake.glob("*/*/*/*.parquet"):
        pq.read_table(file)  # every partition whole
    assert report_json(fleet_report(lake=lake, now=NOW)) == good
    finished = export_lake(db, lake)
    assert finished.tables["invocations"].written >= 1
    assert _lake_counts(lake) == store_counts(db)
    assert not (lake / "_staging").exists()


def test_an_export_killed_midway_leaves_the_previous_partitions_readable(tmp_path: Path) -> None:
    """A real SIGKILL of the exporting process after its third partition was moved in."""
    db = simulated_store(tmp_path, runs=150, seed=10, window=2)
    lake = tmp_path / "lake"
    export_lake(db, lake)
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET error_message = coalesce(error_message, '') || '!'")
    con.close()
    script = f"""
import os, signal
import tracekit.lake.export as export
real, moved = os.replace, []
def replace(src, dst):
    real(src, dst)
    if str(dst).endswith('.parquet'):
        moved.append(dst)
        if len(moved) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
export.os.replace = replace
export.export_lake({str(db)!r}, {str(lake)!r})
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9
    assert (lake / "_staging").exists()  # it really stopped in the middle
    for file in lake.glob("*/*/*/*.parquet"):
        pq.read_table(file)
    assert _lake_counts(lake) == store_counts(db)  # the runs partitions: old or new, whole
    export_lake(db, lake)
    assert not (lake / "_staging").exists()
    assert report_json(fleet_report(lake=lake, now=NOW)) == report_json(
        fleet_report(Store(db, read_only=True), now=NOW)
    )


def test_hostile_service_names_survive_the_folders(tmp_path: Path) -> None:
    db = hostile_store(tmp_path)
    lake = tmp_path / "lake"
    export_lake(db, lake)
    con = duckdb.connect(str(db), read_only=True)
    stored = sorted(r[0] for r in con.execute("SELECT DISTINCT service FROM runs").fetchall())
    con.close()
    assert stored == sorted(HOSTILE_SERVICES)
    # pyarrow, with the Hive layout and its own unescaping, reads the same names back.
    dataset = ds.dataset(lake / "runs", format="parquet", partitioning="hive")
    names = sorted(set(dataset.to_table(columns=["service"]).column("service").to_pylist()))
    assert names == stored
    with Store(db, read_only=True) as store:
        expected = report_json(fleet_report(store, now=NOW))
    assert report_json(fleet_report(lake=lake, now=NOW)) == expected


def test_export_errors_are_one_line(tmp_path: Path) -> None:
    done = cli(
        "export", "--db", str(tmp_path / "none.duckdb"), "--to", str(tmp_path / "l"), check=False
    )
    assert (
        done.returncode == 2
        and done.stderr.startswith("Error: ")
        and "Traceback" not in done.stderr
    )
    done = cli("fleet", "--lake", str(tmp_path), check=False)
    assert done.returncode == 2 and "no lake here" in done.stderr
    done = cli("fleet", "--engine", "spark", check=False)
    assert done.returncode == 2 and "--lake" in done.stderr
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / MANIFEST).write_text("{not json")
    done = cli("fleet", "--lake", str(tmp_path / "bad"), check=False)
    assert done.returncode == 2 and "manifest" in done.stderr


def test_percentiles_on_the_command_line_and_a_report_beyond_memory_is_one_line(
    sim_db: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    export_lake(sim_db, lake)
    exact = json.loads(cli("fleet", "--lake", str(lake), "--format", "json").stdout)
    approx = json.loads(
        cli("fleet", "--lake", str(lake), "--format", "json", "--percentiles", "approx").stdout
    )
    assert [r["agent"] for r in exact["latency"]] != [] and exact["outcomes"] == approx["outcomes"]
    assert {r["agent"]: r["calls"] for r in exact["latency"]} == {
        r["agent"]: r["calls"] for r in approx["latency"]
    }
    env = {**os.environ, "TRACEKIT_DB_MEMORY": "1MB"}
    done = subprocess.run(
        [TRACEKIT, "fleet", "--lake", str(lake)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("Error: the fleet report needs more memory")
    assert "TRACEKIT_DB_MEMORY" in done.stderr and "--percentiles approx" in done.stderr
