"""Readers wait for a store another process writes, and a lock names its holder."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests._store_helpers import TRACEKIT, cli, fleet, write

# A process that opens the store and holds it until told to let go (a line on stdin).
_HOLD = """\
import sys, duckdb
con = duckdb.connect(sys.argv[-2], read_only=sys.argv[-1] == "ro")
print("holding", flush=True)
sys.stdin.readline()
con.close()
print("released", flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wait")
    path = tmp / "s.duckdb"
    cli("ingest", str(write(tmp / "fleet.jsonl", fleet(2))), db=path)
    return path


@contextmanager
def holding(script: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """Run ``script ARGS`` (holding the store) until the block ends."""
    if not script.exists():
        script.write_text(_HOLD)
    holder = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        yield holder
    finally:
        holder.kill()
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "released"


# Each read command, and what it prints once it has read the store.
READERS = {
    "runs": (["runs"], "r0"),
    "rejects": (["rejects"], "(no rows)"),
    "sql": (["sql", "SELECT 'r' || count(*) AS n FROM runs"], "r2"),
    "tree": (["tree", "r0"], "billing"),
    "fleet": (["fleet", "--format", "json"], '"outcomes"'),
    "dashboard": (["dashboard", "--out", "DASHBOARD"], "dashboard written"),
}


def _argv(command: list[str], tmp_path: Path) -> list[str]:
    return [str(tmp_path / "d.html") if word == "DASHBOARD" else word for word in command]


@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_fails_at_once_with_wait_0_naming_the_holder(
    db: Path, tmp_path: Path, name: str
) -> None:
    with holding(tmp_path / "holder.py", str(db), "rw") as holder:
        started = time.monotonic()
        done = cli(*_argv(READERS[name][0], tmp_path), "--wait", "0", db=db, check=False)
        assert time.monotonic() - started < 8  # no waiting (the time is Python starting)
    assert done.returncode == 2
    first, *rest = done.stderr.splitlines()
    assert first == (f"Error: {db}: the store is locked by `holder.py {db} rw` (pid {holder.pid})")
    assert len(rest) == 1 and "that ingest" not in rest[0]
    assert done.stdout == ""


@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_waits_for_the_writer_and_then_reads(db: Path, tmp_path: Path, name: str) -> None:
    command, expected = READERS[name]
    argv = [TRACEKIT, *_argv(command, tmp_path), "--db", str(db), "--wait", "60"]
    with holding(tmp_path / "holder.py", str(db), "rw") as holder:
        reader = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(3)  # long enough for the reader to have found the store locked
            assert reader.poll() is None, reader.communicate()
            release(holder)
            out, err = reader.communicate(timeout=60)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.communicate()
    assert reader.returncode == 0, err
    assert expected in out + err


def test_the_default_wait_sees_a_short_ingest_through(db: Path, tmp_path: Path) -> None:
    with holding(tmp_path / "holder.py", str(db), "rw") as holder:
        reader = subprocess.Popen(
            [TRACEKIT, "runs", "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2)
        release(holder)
        out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert "r1" in out


def test_a_waiting_reader_gives_up_after_its_wait(db: Path, tmp_path: Path) -> None:
    with holding(tmp_path / "holder.py", str(db), "rw") as holder:
        started = time.monotonic()
        done = cli("runs", "--wait", "1.5", db=db, check=False)
        took = time.monotonic() - started
    assert done.returncode == 2 and took >= 1.5
    assert done.stderr.splitlines()[0].endswith(f"(pid {holder.pid}); gave up after waiting 1.5 s")


def test_an_ingest_held_off_by_a_reader_names_the_reader(db: Path, tmp_path: Path) -> None:
    trace = write(tmp_path / "more.jsonl", fleet(1))
    with holding(tmp_path / "notebook.py", str(db), "ro") as holder:
        done = cli("ingest", str(trace), db=db, check=False)
    assert done.returncode == 2
    assert f"locked by `notebook.py {db} ro` (pid {holder.pid})" in done.stderr
    assert "that ingest" not in done.stderr  # the holder is a reader, not an ingest


def test_a_tracekit_ingest_holding_the_store_is_named_as_one(db: Path, tmp_path: Path) -> None:
    script = tmp_path / "bin" / "tracekit"  # how a console script shows in /proc/PID/cmdline
    script.parent.mkdir()
    with holding(script, "ingest", "big.jsonl", "--db", str(db), "rw") as holder:
        done = cli("runs", "--wait", "0", db=db, check=False)
    first, hint = done.stderr.splitlines()
    assert first.endswith(f"locked by `tracekit ingest big.jsonl --db {db} rw` (pid {holder.pid})")
    assert hint == "Wait for that ingest to finish, or use another --db file."
