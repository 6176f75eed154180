"""An ingest killed at any point is finished by the next: the store ends as a clean ingest's.

``tracekit ingest`` runs as a real process and is SIGKILLed at a point seen
from outside, through ``/proc/PID/fdinfo``: in load (a trace file is open and
read to its end: its chunk is being stored), or in derive (every file read and
closed). The kill is checked to have landed there from the store it leaves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests._store_helpers import TRACEKIT, cli, run_lines, write

pytestmark = pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="needs /proc")

FILES = 4
RUNS = 1500  # per file: long enough a derive (about a second) to be killed in
Offsets = dict[Path, list[int]]

# Each table sorted in full, without what differs between two ingests of the
# same lines (ingest ids, classification times).
_TABLES = {
    "events": "SELECT * EXCLUDE (ingest_id) FROM events",
    "invocations": "SELECT * FROM invocations",
    "steps": "SELECT * FROM steps",
    "runs": "SELECT * EXCLUDE (classified_at) FROM runs",
    "rejects": "SELECT * EXCLUDE (ingest_id) FROM rejects",
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four files of runs, each with a bad line and a duplicate."""
    folder = tmp_path_factory.mktemp("traces")
    for k in range(FILES):
        lines: list[str] = []
        for n in range(RUNS):
            lines += run_lines(f"f{k}r{n}", ok=n % 3 != 0)
        lines.insert(10, "not json\n")
        lines.append(lines[0])
        write(folder / f"part{k}.jsonl", lines)
    return folder


@pytest.fixture(scope="module")
def clean(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple]]:
    db = tmp_path_factory.mktemp("clean") / "clean.duckdb"
    cli("ingest", str(traces), db=db)
    return snapshot(db)


def snapshot(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in _TABLES.items()
        }
    finally:
        con.close()


def offsets(pid: int, paths: list[Path]) -> Offsets | None:
    """The read offset of each open descriptor of ``paths``; None once the process is gone."""
    found: Offsets = {}
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return None
    for fd in fds:
        try:
            target = fd.readlink()
            if target in paths:
                info = (Path(f"/proc/{pid}/fdinfo") / fd.name).read_text()
                found.setdefault(target, []).append(int(info.split()[1]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return found


def in_load(part: int) -> Callable[[Offsets, list[Path]], bool]:
    """While file ``part`` is open and read to its end: its chunk is being stored."""

    def seen(open_now: Offsets, files: list[Path]) -> bool:
        path = files[part]
        return path.stat().st_size in open_now.get(path, [])

    return seen


def in_derive() -> Callable[[Offsets, list[Path]], bool]:
    """Once the last file has been read to its end and no file is open any more."""
    state = {"read": False}

    def seen(open_now: Offsets, files: list[Path]) -> bool:
        if state["read"] and not open_now:
            time.sleep(0.05)  # past the last bookkeeping, into the derive
            return True
        last = files[-1]
        state["read"] = state["read"] or last.stat().st_size in open_now.get(last, [])
        return False

    return seen


def kill_ingest(traces: Path, db: Path, when: Callable[[Offsets, list[Path]], bool]) -> None:
    files = sorted(traces.iterdir())
    env = {**os.environ, "NO_COLOR": "1"}
    argv = [TRACEKIT, "ingest", str(traces), "--db", str(db)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while (open_now := offsets(proc.pid, files)) is not None and proc.poll() is None:
            if when(open_now, files):
                break
            time.sleep(0.002)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the ingest ended before it could be killed"


def log(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT l.ingest_id, lines_read, accepted, rejected, duplicates, finished_at IS NOT NULL,"
            " (SELECT count(*) FROM events e WHERE e.ingest_id = l.ingest_id),"
            " (SELECT count(*) FROM rejects r WHERE r.ingest_id = l.ingest_id)"
            " FROM ingest_log l ORDER BY ingest_id"
        ).fetchall()
    finally:
        con.close()


def assert_reconciles(db: Path) -> None:
    for _, read, accepted, rejected, duplicates, _, events, rejects in log(db):
        assert read == accepted + rejected + duplicates
        assert (accepted, rejected) == (events, rejects)


def total_read(db: Path) -> int:
    return sum(row[1] for row in log(db))


LINES = FILES * (RUNS * 6 + 2)


@pytest.mark.parametrize(
    "kills",
    [
        pytest.param(["load"], id="in-load"),
        pytest.param(["derive"], id="in-derive"),
        pytest.param(["load", "load-again"], id="in-load-then-in-its-recovery-load"),
        pytest.param(["load", "derive"], id="in-load-then-in-its-recovery-derive"),
    ],
)
def test_a_killed_ingest_is_finished_by_the_next_as_a_clean_ingest(
    kills: list[str], traces: Path, clean: dict[str, list[tuple]], tmp_path: Path
) -> None:
    db = tmp_path / "s.duckdb"
    for kill in kills:
        when = {"load": in_load(1), "load-again": in_load(2), "derive": in_derive()}[kill]
        kill_ingest(traces, db, when)
        assert_reconciles(db)
        assert not any(row[5] for row in log(db)), "a killed ingest is not derived"
        if kill == "derive":
            assert total_read(db) == LINES, "killed in derive: every line stored"
        else:
            assert 0 < total_read(db) < LINES, "killed in load: some lines stored, not all"
    done = cli("ingest", str(traces), db=db)
    assert done.stdout.strip().splitlines()[-1].startswith("ingested 4 sources")
    assert_reconciles(db)
    assert all(row[5] for row in log(db))
    assert total_read(db) == LINES, "no line read twice"
    assert snapshot(db) == clean


def _file_size_limit(limit: int) -> Callable[[], None]:
    """In the child: writes past ``limit`` bytes fail with EFBIG, as on a full disk."""

    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_is_one_line_and_the_next_ingest_finishes_the_store(
    traces: Path, clean: dict[str, list[tuple]], tmp_path: Path
) -> None:
    db = tmp_path / "s.duckdb"
    cli("ingest", str(traces / "part0.jsonl"), db=db)
    limit = db.stat().st_size + (256 << 10)
    env = {**os.environ, "NO_COLOR": "1"}
    full = subprocess.run(
        [TRACEKIT, "ingest", str(traces), "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=_file_size_limit(limit),
    )
    assert full.returncode == 2, full.stderr
    said = [line for line in full.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("Error: cannot write the store"), said
    assert "File too large" in said[0]
    assert cli("runs", db=db).returncode == 0  # it still opens
    assert_reconciles(db)
    cli("ingest", str(traces), db=db)
    assert_reconciles(db)
    assert total_read(db) == LINES
    assert snapshot(db) == clean


def test_a_record_the_derive_cannot_take_does_not_poison_the_store(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    poison = write(
        tmp_path / "p.jsonl", ['{"type":"run.start","ts":1e16,"runId":"r","agent":"a"}\n']
    )
    first = cli("ingest", str(poison), db=db, check=False)
    assert "Traceback" not in first.stderr
    if first.returncode != 0:  # refused whole, with one line naming the file
        said = [line for line in first.stderr.splitlines() if line.strip()]
        assert first.returncode == 2 and len(said) == 1 and str(poison) in said[0], said
    sample = Path(__file__).parent.parent / "sample_traces" / "child_failure.jsonl"
    cli("ingest", str(sample), db=db)
    assert_reconciles(db)
    assert "error" in cli("runs", db=db).stdout
