"""Ctrl-C and SIGTERM at any moment of ``tracekit ingest``: one line, 130/143, a consistent store.

A real ingest of several simulated files into a store that already holds
one is interrupted at points spread over its whole length, from the moment
the command holds the store to its last line. Each time: exit ``128 +
signal`` (or 0 when the ingest had ended), one line on stderr and no
traceback; the store either as it was or as the whole ingest leaves it,
every run derived and classified, no ingest left unfinished; and the next
ingest ends where an uninterrupted one does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

from tests._tree_helpers import TRACEKIT, run_cli

_STATE = """
SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM runs),
       (SELECT count(*) FROM runs WHERE classified_at IS NULL),
       (SELECT count(*) FROM ingest_log WHERE finished_at IS NULL),
       (SELECT list(outcome ORDER BY run_id) FROM runs)
"""


_BLOCK = 256 << 10  # DuckDB's block: a rewritten store may differ from the original by one


def _state(db: Path) -> tuple[object, ...]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(_STATE).fetchone()
    finally:
        con.close()
    assert row is not None
    return tuple(row)


def _holds(pid: int, db: Path) -> bool:
    """The process has the store file open: its signal handling is in place."""
    try:
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}") == str(db) for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return False


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[object, ...]]:
    """Three trace files, a store holding the first, and the state of all three ingested."""
    root = tmp_path_factory.mktemp("interrupt")
    traces = root / "traces"
    traces.mkdir()
    for seed in range(3):
        out = traces / f"part{seed}.jsonl"
        made = run_cli(
            "simulate",
            "--runs",
            "400",
            "--seed",
            str(seed),
            "--start",
            "2026-01-01T00:00:00Z",
            "-o",
            str(out),
        )
        assert made.returncode == 0, made.stderr
    base = root / "base.duckdb"
    assert run_cli("ingest", str(traces / "part0.jsonl"), "--db", str(base)).returncode == 0
    whole = root / "whole.duckdb"
    shutil.copy(base, whole)
    assert run_cli("ingest", str(traces), "--db", str(whole)).returncode == 0
    return traces, base, _state(whole)


def _interrupt(traces: Path, db: Path, sig: int, delay: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [TRACEKIT, "ingest", str(traces), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    while not _holds(proc.pid, db) and proc.poll() is None:
        time.sleep(0.002)
    time.sleep(delay)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_an_ingest_interrupted_anywhere_leaves_a_consistent_store_and_resumes(
    fleet: tuple[Path, Path, tuple[object, ...]], tmp_path: Path
) -> None:
    traces, base, whole = fleet
    before = _state(base)
    started = time.monotonic()
    shutil.copy(base, tmp_path / "timed.duckdb")
    run_cli("ingest", str(traces), "--db", str(tmp_path / "timed.duckdb"))
    length = time.monotonic() - started
    outcomes = set()
    for i in range(7):
        sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
        db = tmp_path / f"s{i}.duckdb"
        shutil.copy(base, db)
        ran = _interrupt(traces, db, sig, delay=length * i / 6)
        lines = ran.stderr.splitlines()
        assert "Traceback" not in ran.stderr, ran.stderr
        if ran.returncode in (0, -sig):  # the ingest ended before the signal came
            # (a signal in the interpreter's last moments finds the default handler)
            # Killed after the ingest's last commit, its report may still be in the
            # pipe's buffer: the store must be whole either way.
            if ran.returncode == 0:
                assert ran.stdout.splitlines()[-1].startswith("ingested 3 sources"), ran.stdout
            assert _state(db) == whole
            outcomes.add("finished")
            continue
        assert ran.returncode == 128 + sig, (i, ran.returncode, ran.stderr)
        assert len(lines) == 1 and "interrupted" in lines[0], ran.stderr
        assert signal.Signals(sig).name in lines[0]
        state = _state(db)
        assert state[2:4] == (0, 0)  # every run classified, no ingest left unfinished
        assert state in (before, whole), (i, lines, state[:4])
        outcomes.add("kept as it was" if state == before else "finished")
        if state == before:  # nothing kept, nor the space the chunks it undid took
            assert db.stat().st_size <= base.stat().st_size + _BLOCK, (i, db.stat().st_size)
        again = run_cli("ingest", str(traces), "--db", str(db))
        assert again.returncode == 0, again.stderr
        assert _state(db) == whole
    assert "kept as it was" in outcomes


def test_an_interrupted_new_store_is_not_left_behind(
    fleet: tuple[Path, Path, tuple[object, ...]], tmp_path: Path
) -> None:
    traces, _, _ = fleet
    db = tmp_path / "new.duckdb"
    ran = _interrupt(traces, db, signal.SIGINT, delay=0.2)
    assert ran.returncode == 130, ran.stderr
    assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr
    assert not db.exists()


def test_an_interrupted_ingest_gives_back_the_space_it_took(
    fleet: tuple[Path, Path, tuple[object, ...]], tmp_path: Path
) -> None:
    """Stopped twice after its chunks reached the file itself: the store does not grow."""
    from tracekit.cli.ingest import store_to_ingest_into
    from tracekit.errors import IngestInterrupted

    traces, base, _ = fleet
    db = tmp_path / "s.duckdb"
    shutil.copy(base, db)
    for _ in range(2):
        asked: list[int] = []
        with (
            pytest.raises(IngestInterrupted, match="nothing of it was kept"),
            store_to_ingest_into(str(db)) as store,
        ):

            def stop(store: object = store, asked: list[int] = asked) -> int:
                asked.append(1)
                if len(asked) < 3:
                    return 0
                store.con.execute("CHECKPOINT")  # type: ignore[attr-defined]
                return signal.SIGINT  # the committed chunks are in the file: undone, stop

            store.ingest([str(traces)], stop=stop)
        assert len(asked) >= 3  # stopped mid-way, not at the end
        assert _state(db) == _state(base)
        assert db.stat().st_size <= base.stat().st_size + _BLOCK
        assert not db.with_name(db.name + ".compact").exists()
