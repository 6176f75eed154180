"""A full disk: writes refused with a reason, reads never a 500, and back on its own once it grows.

The store lives on a small tmpfs (mounted here: the test runs as root) that
is filled until the server refuses, then grown; the server resumes without a
restart, and every span it acknowledged is in the store once it stops.
"""

from __future__ import annotations

import contextlib
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


def _span(i: int) -> bytes:
    span = {
        "traceId": f"{i + 1:032x}",
        "spanId": f"{i + 1:016x}",
        "name": "invoke_agent filler",
        "startTimeUnixNano": str(1700000000000000000 + i * 1000),
        "endTimeUnixNano": str(1700000001000000000 + i * 1000),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": f"agent-{i}"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": os.urandom(60_000).hex()}},
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def _fill(disk: Path, leave: int) -> None:
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(disk / "filler", "wb") as out:
        out.write(b"\0" * max(free - leave, 0))


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
    refusals: list[tuple[int, str]] = []
    try:
        _fill(small_disk, 4 << 20)
        for i in range(400):
            status, body, _ = server.post("/v1/traces", _span(i), JSON)
            if status == 200:
                acknowledged += 1
            else:
                refusals.append((status, json.loads(body)["message"]))
                if len(refusals) >= 3:
                    break
            time.sleep(0.02)
        assert refusals and {s for s, _ in refusals} == {503}, refusals
        for path in ("/api/runs", "/api/ingest", "/healthz", "/"):
            assert server.get(path)[0] in (200, 503), path  # never a 500
        # The disk grows (the filler goes): the server takes writes again by itself.
        (small_disk / "filler").unlink()
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
        _wait(server, "/healthz", 200, 15)
        for i in range(400, 405):
            status, body, _ = server.post("/v1/traces", _span(i), JSON)
            assert status == 200, body
            acknowledged += 1
        _wait(server, "/api/runs", 200, 5)
    finally:
        assert server.stop() == 0, server.err
    assert "Traceback" not in server.err
    with Store(small_disk / "full.duckdb", read_only=True) as store:
        stored = int(store.sql("SELECT count(*) AS n FROM runs")["n"][0])
    assert stored == acknowledged, (stored, acknowledged, server.err[-2000:])
    with contextlib.suppress(OSError):
        os.unlink(small_disk / "full.duckdb")
