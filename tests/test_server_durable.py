"""Acknowledged data is durable past DuckDB's log, and every loss is named with its count.

The spool keeps what it acknowledged until a ``CHECKPOINT`` has put the rows
in the store's file: a SIGKILL under load, then 100 bytes cut off the store's
``.wal`` and a byte flipped in a spool frame, and the next start stores every
acknowledged span again (never twice), except those of the damaged frame,
which a message names with their count. A spool directory that cannot be
used is one ``Error:`` line at start, and a 503 with the reason at run time.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import signal
import struct
import subprocess
import threading
from pathlib import Path

import duckdb
import pytest
from _server_helpers import TRACEKIT, send_control, start
from test_server_recovery import BATCH, JSON, _batch

from tracekit.server.spool import Entry, Spool

_HEADER = struct.Struct("<4sIIII")


def _ids(batch: int) -> set[str]:
    return {f"{n + 1:016x}" for n in range(batch * BATCH, (batch + 1) * BATCH)}


def _frames(segment: Path) -> list[tuple[int, int, int]]:
    """``(offset, size, spans)`` of each frame of a spool segment."""
    data, at, out = segment.read_bytes(), 0, []
    while at + _HEADER.size <= len(data):
        _, size, items, _, _ = _HEADER.unpack_from(data, at)
        out.append((at, _HEADER.size + size, items))
        at += _HEADER.size + size
    return out


def _flip_one_frame_past_the_checkpoint(spool: Path) -> int:
    """Flip a payload byte of a frame the store's file may lack; the spans it held."""
    checkpoint = spool / "checkpoint.json"
    position = json.loads(checkpoint.read_text())["position"] if checkpoint.exists() else 0
    candidates = []
    for segment in sorted(spool.glob("*.seg")):
        start = int(segment.stem)
        candidates += [
            (start + at, segment, at, size, items) for at, size, items in _frames(segment)
        ]
    past = [c for c in candidates if c[0] >= position] or candidates[-1:]
    _, segment, at, size, items = past[len(past) // 2]
    with open(segment, "r+b") as out:
        out.seek(at + _HEADER.size + size // 3)
        byte = out.read(1)
        out.seek(at + _HEADER.size + size // 3)
        out.write(bytes([byte[0] ^ 0x5A]))
    return items


def test_a_kill_under_load_a_cut_log_and_a_flipped_spool_byte_lose_nothing_unnamed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "crash.duckdb"
    server = start(db)
    acknowledged: list[int] = []
    stop = threading.Event()

    def send() -> None:
        for i in range(400):
            if stop.is_set():
                return
            try:
                status = server.post("/v1/traces", _batch(i), JSON)[0]
            except OSError:
                return  # the server is gone
            if status == 200:
                acknowledged.append(i)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        deadline = 120.0
        while len(acknowledged) < 40 and sender.is_alive() and deadline > 0:
            stop.wait(0.1)
            deadline -= 0.1
        server.proc.send_signal(signal.SIGKILL)
    finally:
        stop.set()
        sender.join(60)
        server.proc.communicate(timeout=60)
    assert len(acknowledged) >= 40
    wal = db.with_name(db.name + ".wal")
    if wal.exists() and wal.stat().st_size > 100:
        with open(wal, "r+b") as out:
            out.truncate(wal.stat().st_size - 100)
    damaged = _flip_one_frame_past_the_checkpoint(db.with_name(db.name + ".spool"))

    again = start(db)
    try:
        send_control(again, 1, timeout=120)
    finally:
        assert again.stop() == 0, again.err
    assert "Traceback" not in again.err
    named = sum(
        int(n) for n in re.findall(r"which held (\d+) acknowledged spans?: lost", again.err)
    )
    con = duckdb.connect(str(db), read_only=True)
    try:
        stored = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
        (rows,) = con.execute("SELECT count(*) FROM runs").fetchone() or (0,)
    finally:
        con.close()
    assert rows == len(stored)  # never stored twice
    missing = set().union(*(_ids(i) for i in acknowledged)) - stored
    assert len(missing) <= named, (len(missing), named, again.err[-2000:])
    assert named in (0, damaged)
    if named:
        assert "reloading spool bytes" in again.err


def test_a_damaged_spool_frame_is_skipped_and_its_spans_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool_dir = tmp_path / "s.spool"
    spool = Spool(spool_dir, limit=1 << 30, deliver=lambda *args: None)
    spool.start()
    for n in (3, 5, 7):
        spool.append(Entry("serve:otlp", spans=[("t", str(i)) for i in range(n)])).result(10)
    spool.stop()
    (segment,) = spool_dir.glob("*.seg")
    at, size, items = _frames(segment)[1]
    data = bytearray(segment.read_bytes())
    data[at + _HEADER.size + size // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    with caplog.at_level(logging.ERROR, logger="tracekit.server"):
        again = Spool(spool_dir, limit=1 << 30, deliver=lambda *args: None)
        entries = [len(entry.spans) for _, _, entry in again.replay(0)]
        again.stop()
    assert entries == [3, 7] and items == 5
    assert again.damaged_spans == 5
    assert "which held 5 acknowledged spans: lost" in caplog.text


def test_a_spool_directory_that_cannot_be_used_is_one_error_line(tmp_path: Path) -> None:
    db = tmp_path / "nospool.duckdb"
    db.with_name(db.name + ".spool").write_text("a file where the spool directory goes")
    done = subprocess.run(
        [TRACEKIT, "serve", "--db", str(db), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "cannot use the spool directory" in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_a_spool_directory_gone_at_run_time_is_a_503_with_the_reason(tmp_path: Path) -> None:
    db = tmp_path / "gone.duckdb"
    server = start(db)
    try:
        send_control(server, 1)
        shutil.rmtree(db.with_name(db.name + ".spool"))
        status, body, _ = server.post("/v1/traces", _batch(0), JSON)
        assert status == 503, body
        health = server.get("/healthz")
        assert health[0] == 503 and "spool directory" in json.loads(health[1])["error"]
    finally:
        server.stop()
    assert "Traceback" not in server.err
