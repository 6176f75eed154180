"""The loops table in the lake: exported with its run's day and service, read back as the store's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _loops_helpers import HOSTILE_SERVICE, LOOPS, loop_store
from _store_helpers import cli

from tracekit.lake.export import export_lake
from tracekit.lake.layout import WRITERS, escape


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return loop_store(tmp_path_factory.mktemp("lake-loops"))


def test_the_loops_are_exported_in_their_runs_partitions(db: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    report = export_lake(db, lake, writer="w")
    assert report.tables["loops"].rows == len(LOOPS)
    # r-rec ran on 2026-01-05 under the hostile service: its loop lies there too
    folder = lake / "loops" / "day=2026-01-05" / f"service={escape(HOSTILE_SERVICE)}"
    assert (folder / "w.parquet").exists()
    from_store = json.loads(cli("fleet", "--format", "json", db=db).stdout)
    from_lake = json.loads(cli("fleet", "--lake", str(lake), "--format", "json").stdout)
    assert from_lake["loops"] == from_store["loops"] and len(from_lake["loops"]) == 4


def test_a_lake_whose_writers_predate_loops_reports_none(db: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    export_lake(db, lake, writer="old")
    shutil.rmtree(lake / "loops")  # as a writer before v10 left it: no folder, no entry
    manifest = lake / WRITERS / "old.json"
    data = json.loads(manifest.read_text())
    del data["tables"]["loops"]
    manifest.write_text(json.dumps(data))
    report = json.loads(cli("fleet", "--lake", str(lake), "--format", "json").stdout)
    assert report["loops"] == [] and report["totals"]["loops"] == 0
    assert report["runs"] == 6
