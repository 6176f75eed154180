"""The mapping process: killed, interrupted or orphaned, nothing acknowledged is lost."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import duckdb
from _server_helpers import Server, start
from test_server_recovery import JSON, _batch

from tracekit.server.mapper import Mapping, MappingSettings, MapRequest
from tracekit.server.spool import _ENCODER, Entry


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _mapper(server: Server) -> int:
    """The server's mapping process (beside it, multiprocessing's resource tracker)."""
    return _child(server, "tracekit-mapper")


def _child(server: Server, name: str, timeout: float = 30) -> int:
    """The server's child process of that name (it names itself once started)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            c for c in _children(server.pid) if Path(f"/proc/{c}/comm").read_text().strip() == name
        ]
        if len(found) == 1 or time.monotonic() > deadline:
            (child,) = found
            return child
        time.sleep(0.05)


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # exited, its parent not yet told
            return True
        time.sleep(0.05)
    return False


def _count(db: Path, sql: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute(sql).fetchone()[0])
    finally:
        con.close()


def test_a_killed_mapping_process_is_replaced_and_every_acknowledged_span_stored(
    tmp_path: Path,
) -> None:
    db = tmp_path / "killed.duckdb"
    server = start(db)
    try:
        assert server.post("/v1/traces", _batch(0), JSON)[0] == 200
        first = _mapper(server)
        os.kill(first, signal.SIGKILL)  # while batch 0 settles, or is mapped, or is loaded
        deadline = time.monotonic() + 30
        while server.get("/healthz")[0] != 503:  # the loss is seen (the process is gone)
            assert time.monotonic() < deadline, "the server did not notice"
            time.sleep(0.05)
        while server.post("/v1/traces", _batch(1), JSON)[0] != 200:  # until it takes writes
            assert time.monotonic() < deadline, "the server did not take writes again"
            time.sleep(0.2)
        while _gone(first) is False or _mapper(server) == first:  # replaced (not a zombie)
            assert time.monotonic() < deadline, "the mapping process was not replaced"
            time.sleep(0.2)
        while server.get("/healthz")[0] != 200:
            assert time.monotonic() < deadline, "/healthz did not come back"
            time.sleep(0.2)
    finally:
        assert server.stop() == 0
    assert _count(db, "SELECT count(*) FROM runs") == 400
    assert _count(db, "SELECT coalesce(sum(duplicates), 0) FROM ingest_log") == 0


def test_ctrl_c_to_the_whole_group_stops_gracefully_with_everything_stored(
    tmp_path: Path,
) -> None:
    db = tmp_path / "interrupted.duckdb"
    server = start(db)
    mapper = _mapper(server)
    for i in range(3):
        assert server.post("/v1/traces", _batch(i), JSON)[0] == 200
    # A terminal's Ctrl-C reaches every process of the group: the mapping waits
    # for the server to stop it, after its last cycle.
    os.kill(mapper, signal.SIGINT)
    assert server.stop(signal.SIGINT) == 0
    assert _gone(mapper)
    assert _count(db, "SELECT count(*) FROM runs") == 600


def test_the_mapping_process_ends_when_the_server_is_killed(tmp_path: Path) -> None:
    server = start(tmp_path / "orphan.duckdb")
    mapper = _mapper(server)
    server.proc.kill()
    server.proc.communicate()
    assert _gone(mapper), "the mapping process outlived its server"


def test_ingest_status_says_where_the_cpu_went(tmp_path: Path) -> None:
    server = start(tmp_path / "stages.duckdb")
    try:
        for i in range(3):
            assert server.post("/v1/traces", _batch(i), JSON)[0] == 200
        stages = server.wait_loaded(600)["stage_cpu_s"]
        assert stages["decode (decoding process and request threads)"] > 0
        assert stages["map (mapping process)"] > 0
        assert stages["load (loader thread)"] > 0
        assert stages["process (all threads, DuckDB's too)"] >= stages["load (loader thread)"]
        assert json.loads(server.get("/api/ingest")[1])["spans_loaded"] == 600
    finally:
        assert server.stop() == 0


def _payload(i: int) -> bytes:
    from tracekit.server.decode import decode_otlp_json, spans_entry

    entry: Entry = spans_entry(decode_otlp_json(_batch(i, 3)), "serve:otlp")
    return _ENCODER.encode(entry)


def test_a_cycle_takes_what_is_complete_and_says_where_the_checkpoint_may_go() -> None:
    mapping = Mapping(MappingSettings(settle=1.0, linger=300.0, max_pending=100, remember=4))
    fed = mapping.cycle(MapRequest(now=10.0, final=False, end=50, entries=[(0, _payload(0), 10.0)]))
    assert (fed.records, fed.pending, fed.first_held) == ([], 3, 0)  # settling
    done = mapping.cycle(
        MapRequest(now=11.5, final=False, end=90, entries=[(50, _payload(1), 11.5)])
    )
    assert len(done.records) == 6  # the first three runs: an enter and an exit each
    assert sorted(done.taken.values()) == [0, 0, 0]
    assert (done.pending, done.first_held, done.spans_fed) == (3, 50, 6)
    last = mapping.cycle(MapRequest(now=11.5, final=True, end=90, entries=[]))
    assert (len(last.records), last.pending, last.first_held) == (6, 0, 90)


def test_spans_mapped_before_a_crash_are_not_mapped_again_on_replay() -> None:
    settings = MappingSettings(
        settle=1.0, linger=300.0, max_pending=100, remember=4, replay_taken={f"{1:032x}": 0}
    )
    mapping = Mapping(settings)
    out = mapping.cycle(MapRequest(now=0.0, final=True, end=50, entries=[(0, _payload(0), 0.0)]))
    assert out.spans_fed == 2 and len(out.records) == 4  # trace 1 skipped, 2 and 3 mapped
