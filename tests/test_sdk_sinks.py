"""Sinks: JSONL appends and batching, and a failing sink never breaks the agent."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from _sdk_helpers import read_jsonl

from tracekit.errors import TraceFileError
from tracekit.events import Event, Exit
from tracekit.sdk import AgentTracer, JsonlSink, MemorySink, Sink


class _DiskFull:
    """A sink whose disk is full: every call raises OSError."""

    def __init__(self) -> None:
        self.calls = 0

    def emit(self, event: Event) -> None:
        self.calls += 1
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")

    def close(self) -> None:
        raise OSError(28, "No space left on device")


def test_failing_sink_logs_once_and_the_agent_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, memory = _DiskFull(), MemorySink()
    assert isinstance(broken, Sink)
    tk = AgentTracer(broken, memory)

    @tk.delegate("refunds")
    def refund(amount: int) -> int:
        return amount

    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"), tk.run("desk"):
        assert [refund(n) for n in range(5)] == list(range(5))
    tk.flush()
    tk.close()
    assert broken.calls == 12  # it was still offered every record
    assert len(memory.events) == 12  # the other sink lost nothing
    warnings = [r for r in caplog.records if r.name == "tracekit.sdk"]
    assert len(warnings) == 1 and "No space left" in warnings[0].getMessage()


def test_jsonl_appends_never_truncates(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    for _ in range(2):
        tk = AgentTracer(JsonlSink(path))
        with tk.run("desk"):
            pass
        tk.close()
    assert len(read_jsonl(path)) == 4


def test_batching_writes_whole_lines_and_flushes_on_close(tmp_path: Path) -> None:
    path = tmp_path / "batched.jsonl"
    sink = JsonlSink(path, batch=16)
    tk = AgentTracer(sink)
    with tk.run("desk"):
        for _ in range(3):
            with tk.delegate("billing"):
                pass
    assert path.read_bytes() == b""  # 8 records, below the batch
    tk.close()
    events = read_jsonl(path)
    assert len(events) == 8 and sum(isinstance(e, Exit) for e in events) == 3


def test_closed_file_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sink = JsonlSink(tmp_path / "x.jsonl")
    tk = AgentTracer(sink)
    sink.close()
    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"), tk.run("desk"):
        with tk.delegate("billing"):
            result = 42
    assert result == 42
    assert sum(r.name == "tracekit.sdk" for r in caplog.records) == 1


def test_unopenable_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError, match="cannot open"):
        JsonlSink(tmp_path / "missing-dir" / "run.jsonl")


_BATCHED_EXIT = """
import sys
from tracekit.sdk import AgentTracer, JsonlSink
tk = AgentTracer(JsonlSink(sys.argv[1], batch=100))
with tk.run("desk"), tk.delegate("billing"):
    pass
# no close(): the records are written at exit all the same
"""


def test_batched_records_are_written_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "exit.jsonl"
    subprocess.run([sys.executable, "-c", _BATCHED_EXIT, str(path)], check=True, timeout=60)
    assert [type(e).__name__ for e in read_jsonl(path)] == ["RunStart", "Enter", "Exit", "RunEnd"]
