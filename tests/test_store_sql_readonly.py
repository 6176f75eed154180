"""``tracekit sql`` and ``Store.sql`` are read-only: no write, no setting, no host file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._store_helpers import cli, fleet, write
from tracekit import Store
from tracekit.errors import StoreError


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("readonly")
    path = tmp / "s.duckdb"
    cli("ingest", str(write(tmp / "fleet.jsonl", fleet(3))), db=path)
    return path


@pytest.fixture(scope="module")
def secret(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host file no query may read (what /etc/shadow is on a real host)."""
    path = tmp_path_factory.mktemp("host") / "secret.csv"
    path.write_text('name,password\nroot,"hunter2"\n')
    return path


def _writes(target: Path) -> list[str]:
    """Statements that write, change a setting or touch the host: each must be refused."""
    return [
        f"EXPLAIN ANALYZE COPY (SELECT 42) TO '{target}'",
        f"COPY (SELECT 42) TO '{target}'",
        "EXPLAIN ANALYZE SET memory_limit = '10MB'",
        "EXPLAIN SET memory_limit = '10MB'",
        "SET memory_limit = '10MB'",
        "LOAD json",
        "EXPLAIN ANALYZE LOAD json",
        "INSTALL httpfs",
        "DELETE FROM events",
        "EXPLAIN ANALYZE DELETE FROM events",
        "UPDATE runs SET status = 'ok'",
        "EXPLAIN ANALYZE UPDATE runs SET status = 'ok'",
        "WITH gone AS (DELETE FROM events RETURNING *) SELECT count(*) FROM gone",
        "EXPLAIN ANALYZE WITH g AS (UPDATE runs SET status = 'x' RETURNING *) SELECT * FROM g",
        "SELECT 1; DELETE FROM events",
        "SELECT 1; SELECT 2",
        "DROP TABLE runs",
        f"ATTACH '{target}.db' AS other",
        "PRAGMA version",
    ]


def _host_reads(secret: Path) -> list[str]:
    return [
        f"SELECT * FROM read_text('{secret}')",
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM read_json('{secret}')",
        f"SELECT * FROM glob('{secret.parent}/*')",
        f"SELECT * FROM '{secret}'",
        f"EXPLAIN ANALYZE SELECT * FROM read_text('{secret}')",
        "SELECT * FROM read_text('/etc/shadow')",
    ]


def test_the_command_refuses_writes_with_one_line(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "written.csv"
    # Every way in goes through Store.sql below; the command is tried on one of each kind.
    for query in _writes(target)[::3]:
        done = cli("sql", query, db=db, check=False)
        assert done.returncode == 2, query
        assert done.stderr.startswith("Error: "), query
        assert len(done.stderr.splitlines()) <= 2 and "Traceback" not in done.stderr, query
        assert done.stdout == "", query
    assert not target.exists() and not Path(f"{target}.db").exists()
    assert cli("sql", "SELECT count(*) AS n FROM events", db=db).stdout.split() == ["n", "18"]


def test_the_command_reads_no_host_file(db: Path, secret: Path) -> None:
    for query in _host_reads(secret)[::2]:
        done = cli("sql", query, db=db, check=False)
        assert done.returncode == 2, query
        assert "hunter2" not in done.stdout + done.stderr and "root" not in done.stdout, query
        assert done.stderr.startswith("Error: ") and "Traceback" not in done.stderr, query
        assert len(done.stderr.splitlines()) <= 2, query


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writable"])
def test_store_sql_refuses_writes_settings_and_host_files(
    db: Path, secret: Path, tmp_path: Path, read_only: bool
) -> None:
    target = tmp_path / "written.csv"
    with Store(db, read_only=read_only) as store:
        before = store.sql("SELECT current_setting('memory_limit') AS m").m.iloc[0]
        for query in _writes(target) + _host_reads(secret):
            with pytest.raises(StoreError) as caught:
                store.sql(query)
            assert "\n" not in str(caught.value), query
        after = store.sql("SELECT current_setting('memory_limit') AS m").m.iloc[0]
        assert after == before != "9.5 MiB"
        assert store.sql("SELECT count(*) AS n FROM events").n.iloc[0] == 18
        assert len(store.runs()) == 3  # the store's own reads still work
    assert not target.exists()


def test_selects_of_every_shape_still_run(db: Path) -> None:
    with Store(db, read_only=True) as store:
        assert store.sql("WITH r AS (SELECT * FROM runs) SELECT count(*) AS n FROM r").n[0] == 3
        assert store.sql("FROM runs SELECT run_id ORDER BY 1").run_id.tolist() == [
            "r0",
            "r1",
            "r2",
        ]
        assert store.sql("SELECT ?::INT AS v", [7]).v[0] == 7
        assert not store.sql("EXPLAIN SELECT * FROM events").empty
        assert not store.sql("EXPLAIN ANALYZE SELECT count(*) FROM events").empty
        assert not store.sql("EXPLAIN (FORMAT json) SELECT 1").empty
        assert "events" in store.sql("SHOW TABLES").name.tolist()
        assert "run_id" in store.sql("DESCRIBE runs").column_name.tolist()
    done = cli("sql", "SELECT 1 UNION ALL SELECT 2 ORDER BY 1", "--format", "csv", db=db)
    assert done.stdout.splitlines() == ["1", "1", "2"]


def test_store_reads_and_reports_work_without_host_access(db: Path) -> None:
    assert "r0" in cli("runs", db=db).stdout
    assert "billing" in cli("tree", "r0", db=db).stdout
    assert cli("fleet", "--format", "json", db=db).stdout.startswith("{")
    assert cli("rejects", db=db).stderr == "(no rows)\n"
