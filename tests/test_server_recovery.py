"""A full disk: writes refused with a reason, reads never a 500, and back on its own once it grows.

The store lives on a small tmpfs (mounted here: the test runs as root) that
is filled until the server refuses, then grown; the server resumes without a
restart, and every span it acknowledged is in the store once it stops.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _server_helpers import Server, start

from tracekit.store import Store

JSON = {"Content-Type": "application/json"}
BATCH = 200


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _batch(i: int, size: int = BATCH) -> bytes:
    """``size`` root spans, each its own trace (one run each), numbered from ``i * size``."""
    spans = []
    for n in range(i * size, (i + 1) * size):
        spans.append(
            {
                "traceId": f"{n + 1:032x}",
                "spanId": f"{n + 1:016x}",
                "name": "invoke_agent filler",
                "startTimeUnixNano": str(1700000000000000000 + n * 1000),
                "endTimeUnixNano": str(1700000001000000000 + n * 1000),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                    {"key": "gen_ai.agent.name", "value": {"stringValue": f"agent-{n % 50}"}},
                ],
            }
        )
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def _fill(disk: Path, leave: int) -> None:
    """Fill the disk up to ``leave`` bytes free, a piece at a time.

    The server writes meanwhile: the filler stops where the disk does
    (ENOSPC is the goal, not a failure), and what it wrote is synced.
    """
    piece = b"\0" * (1 << 20)
    with open(disk / "filler", "wb", buffering=0) as out:
        while True:
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - leave
            if free <= 0:
                break
            try:
                out.write(piece[: min(len(piece), free)])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break


def _wait(server: Server, path: str, status: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    got = 0
    while time.monotonic() < deadline:
        got = server.get(path)[0]
        if got == status:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path}: still {got} after {seconds} s")


def test_a_full_disk_refuses_writes_and_recovers_on_its_own(small_disk: Path) -> None:
    server = start(small_disk / "full.duckdb")
    acknowledged = 0
    try:
        # Acknowledged (in the spool), then the disk fills before the loader stores them.
        for i in range(20):
            status, body, _ = server.post("/v1/traces", _batch(i), JSON)
            assert status == 200, body
            acknowledged += BATCH
        _fill(small_disk, 0)
        _wait(server, "/healthz", 503, 20)  # the load failed: the store refuses writes
        health = json.loads(server.get("/healthz")[1])
        assert "No space left" in health["error"] or "space" in health["error"].lower()
        status, body, _ = server.post("/v1/traces", _batch(20), JSON)
        assert status == 503 and "the store refused a write" in json.loads(body)["message"]
        for path in ("/api/runs", "/api/ingest", "/api/fleet"):
            status, body = server.get(path)
            assert status == 503, (path, body)  # never a 500, always a reason
            assert "unavailable" in json.loads(body)["error"], body
        # The disk grows (the filler goes): the server takes writes again by itself.
        (small_disk / "filler").unlink()
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
        _wait(server, "/healthz", 200, 15)
        for i in range(21, 26):
            status, body, _ = server.post("/v1/traces", _batch(i), JSON)
            assert status == 200, body
            acknowledged += BATCH
        _wait(server, "/api/runs", 200, 5)
    finally:
        assert server.stop() == 0, server.err
    assert "Traceback" not in server.err
    assert "loading resumed" in server.err
    with Store(small_disk / "full.duckdb", read_only=True) as store:
        stored = int(store.sql("SELECT count(*) AS n FROM runs")["n"][0])
    assert stored == acknowledged, (stored, acknowledged, server.err[-2000:])


def test_a_spool_write_on_a_full_disk_is_a_503_and_cut_back(small_disk: Path) -> None:
    server = start(small_disk / "spool.duckdb")
    try:
        _fill(small_disk, 0)
        status, body, headers = server.post("/v1/traces", _batch(0, 2000), JSON)
        assert status == 503 and headers["retry-after"] == "1"
        assert "cannot write the spool" in json.loads(body)["message"]
        (small_disk / "filler").unlink()
        status, body, _ = server.post("/v1/traces", _batch(1), JSON)
        assert status == 200, body  # the next frame follows the last whole one
    finally:
        assert server.stop() == 0, server.err
    with Store(small_disk / "spool.duckdb", read_only=True) as store:
        assert int(store.sql("SELECT count(*) AS n FROM runs")["n"][0]) == BATCH
