"""The memory guard stops the reads it watches once the process is over its cap."""

from __future__ import annotations

import time

import duckdb
import pytest

from tracekit.server.memory import MemoryGuard, MemoryStoppedError, resident_bytes


def test_a_read_over_the_cap_is_stopped_with_the_reason() -> None:
    cursor = duckdb.connect()
    guard = MemoryGuard(cap=resident_bytes() // 2)  # already over: the next look stops it
    began = time.monotonic()
    with pytest.raises(MemoryStoppedError, match="memory passed"), guard.watch(cursor):
        cursor.execute("SELECT count(*) FROM range(10000000000) t(a) WHERE a % 7 = 3").fetchall()
    assert time.monotonic() - began < 5
    cursor.close()


def test_a_read_under_the_cap_runs_and_its_own_errors_pass_through() -> None:
    cursor = duckdb.connect()
    guard = MemoryGuard(cap=1 << 40)
    with guard.watch(cursor):
        assert cursor.execute("SELECT 42").fetchone() == (42,)
    with pytest.raises(duckdb.Error), guard.watch(cursor):
        cursor.execute("SELECT * FROM no_such_table")
    cursor.close()
