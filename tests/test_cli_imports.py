"""Short commands start without pandas: what they print is the same as from a DataFrame.

Importing pandas (and numpy) costs a short command most of its time. ``tracekit
--help`` and ``tracekit tree FILE`` need no table at all; ``runs``, ``rejects``
and ``sql`` print their rows from a :class:`~tracekit._util.plain_frame.PlainFrame`
(:mod:`tracekit.store.listing`) when DuckDB's ``.df()`` would hold the same
values. Each command runs as installed, in a process of its own, which writes
the modules it imported as it exits.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit._util.plain_frame import PlainFrame, like_duckdb_df
from tracekit.cli.tables import fit, render
from tracekit.store.listing import listing

ROOT = Path(__file__).parent.parent
SAMPLE = ROOT / "sample_traces" / "child_failure.jsonl"
RECORDING = (
    ROOT / "tests" / "frameworks" / "recordings" / "openai_agents" / "pingpong_limit.otlp.json"
)
TRACEKIT = str(Path(sys.executable).parent / "tracekit")
HEAVY = frozenset({"pandas", "numpy", "pyarrow"})


def _imported(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The top-level modules the installed ``tracekit`` imported to run ``args``."""
    out = tmp_path / "modules.txt"
    # The CLI may end with os._exit (no teardown): the list is written then too.
    code = (
        "import atexit, os, runpy, sys\n"
        f"def dump(): open({str(out)!r}, 'w').write('\\n'.join(sys.modules))\n"
        "def leave(code, _exit=os._exit): dump(); _exit(code)\n"
        "atexit.register(dump); os._exit = leave\n"
        f"sys.argv = [{TRACEKIT!r}, *{list(args)!r}]\n"
        f"runpy.run_path({TRACEKIT!r}, run_name='__main__')\n"
    )
    env = {"COLUMNS": "120", "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    modules = {name.split(".")[0] for name in out.read_text().splitlines()}
    assert "tracekit" in modules and "encodings" in modules  # the list is real
    return modules, ran


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    bad = folder / "bad.jsonl"
    bad.write_text('not json\n{"type": "run.start"}\n')
    db = folder / "s.duckdb"
    subprocess.run([TRACEKIT, "ingest", str(SAMPLE), str(bad), "--db", str(db)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    return db


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["tree", str(SAMPLE)],
        ["tree", str(SAMPLE), "--format", "json"],
        ["tree", str(RECORDING)],
    ],
    ids=["help", "tree-v1", "tree-json", "tree-otlp"],
)
def test_help_and_tree_file_do_not_import_pandas(args: list[str], tmp_path: Path) -> None:
    modules, ran = _imported(tmp_path, *args)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout  # something was printed
    assert modules & HEAVY == set()


@pytest.mark.parametrize(
    "args",
    [
        ["runs"],
        ["runs", "--format", "json"],
        ["runs", "--status", "failed", "--format", "csv"],
        ["rejects"],
        [
            "sql",
            "SELECT agent, count(*) AS calls, min(start_at) AS first FROM invocations GROUP BY 1",
        ],
    ],
    ids=["runs", "runs-json", "runs-csv", "rejects", "sql"],
)
def test_store_listings_do_not_import_pandas(args: list[str], store: Path, tmp_path: Path) -> None:
    modules, ran = _imported(tmp_path, *args, "--db", str(store))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip()
    assert modules & HEAVY == set()


def test_a_sql_column_pandas_holds_otherwise_goes_through_the_dataframe(
    store: Path, tmp_path: Path
) -> None:
    """A list column: DuckDB's ``.df()`` holds an array, printed as the DataFrame prints it."""
    query = "SELECT run_id, chain FROM invocations WHERE chain IS NOT NULL"
    modules, ran = _imported(tmp_path, "sql", query, "--db", str(store), "--format", "csv")
    assert ran.returncode == 0, ran.stderr
    assert "pandas" in modules
    assert ran.stdout.splitlines()[0] == "run_id,chain"


_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))
_TEXT = st.none() | st.text(_CHARS, max_size=12)
_INT = st.none() | st.integers(-(2**63), 2**63 - 1)
_DOUBLE = st.none() | st.floats(allow_nan=False, allow_infinity=False)
_WHEN = st.none() | st.datetimes(datetime(1971, 1, 1), datetime(2100, 1, 1))
_COLUMNS = {"VARCHAR": _TEXT, "BIGINT": _INT, "DOUBLE": _DOUBLE, "BOOLEAN": st.none() | st.booleans(),
            "TIMESTAMP": _WHEN, "INTEGER": st.none() | st.integers(-(2**31), 2**31 - 1)}  # fmt: skip
_CON = duckdb.connect()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_plain_listing_prints_as_duckdbs_dataframe(data: st.DataObject) -> None:
    types = data.draw(st.lists(st.sampled_from(sorted(_COLUMNS)), min_size=1, max_size=4))
    rows = data.draw(st.lists(st.tuples(*(_COLUMNS[t] for t in types)), max_size=5))
    columns = ", ".join(f"c{i} {t}" for i, t in enumerate(types))
    _CON.execute(f"CREATE OR REPLACE TABLE t ({columns})")
    if rows:
        marks = ", ".join("?" for _ in types)
        _CON.executemany(f"INSERT INTO t VALUES ({marks})", [list(r) for r in rows])
    plain = listing(_CON.execute("SELECT * FROM t"))
    frame = _CON.execute("SELECT * FROM t").df()
    assert isinstance(plain, PlainFrame)
    width = data.draw(st.sampled_from([None, 20, 60]))
    for fmt in ("table", "json", "csv"):
        if width is None:
            assert render(plain, fmt) == render(frame, fmt)
        else:
            (cut, hidden), (cut_frame, hidden_frame) = fit(plain, width), fit(frame, width)
            assert hidden == hidden_frame
            assert render(cut, fmt, width=width) == render(cut_frame, fmt, width=width)


def test_only_the_types_dataframes_hold_as_fetched_are_plain() -> None:
    assert like_duckdb_df(["VARCHAR", "JSON", "BIGINT", "DOUBLE", "BOOLEAN", "TIMESTAMP"])
    for other in (
        "VARCHAR[]",
        "DECIMAL(18,3)",
        "DATE",
        "HUGEINT",
        "FLOAT",
        "TIMESTAMP WITH TIME ZONE",
    ):
        assert not like_duckdb_df([other]), other
