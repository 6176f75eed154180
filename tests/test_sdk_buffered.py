"""The default JSONL sink buffers: when its records reach the file, and what is never lost."""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _sdk_helpers import paired, read_jsonl

from tracekit.events import Enter, Exit, Node, RunEnd, RunStart
from tracekit.sdk import AgentTracer, JsonlSink

#: Long enough that the background flush never runs during a test that uses it.
_NEVER = 3600.0


def _kinds(path: Path) -> list[str]:
    return [type(e).__name__ for e in read_jsonl(path)]


def test_a_run_is_written_when_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    tk = AgentTracer(JsonlSink(path, interval=_NEVER))
    with tk.run("desk"):
        with tk.delegate("billing"), tk.step("look_up"):
            pass
        assert path.read_bytes() == b""  # buffered while the run goes on
    assert _kinds(path) == ["RunStart", "Enter", "Node", "Exit", "RunEnd"]
    with tk.delegate("refunds"):  # an invocation outside any run is top-level too
        pass
    assert _kinds(path)[-2:] == ["Enter", "Exit"]
    tk.close()


def test_the_background_flush_writes_a_run_still_going(tmp_path: Path) -> None:
    path = tmp_path / "slow.jsonl"
    tk = AgentTracer(JsonlSink(path, interval=0.05))
    with tk.run("desk"), tk.delegate("billing"):
        deadline = time.monotonic() + 30  # due in 0.05 s; the machine may be busy
        while path.stat().st_size == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _kinds(path) == ["RunStart", "Enter"]
    tk.close()


def test_a_full_buffer_is_written_in_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    tk = AgentTracer(JsonlSink(path, interval=_NEVER))
    with tk.run("desk"):
        for n in range(600):  # about 120 KiB of records: more than one buffer
            with tk.delegate(f"agent-{n}"):
                pass
        written = read_jsonl(path)  # parses: whole lines only
        assert 0 < len(written) < 1201
    events = read_jsonl(path)
    assert len(events) == 1202 and all(exit_ is not None for _, exit_ in paired(events).values())
    tk.close()


_ENDS_IN_AN_EXCEPTION = """
import sys
from tracekit.sdk import AgentTracer, JsonlSink
tk = AgentTracer(JsonlSink(sys.argv[1], interval=3600))
tk.run("desk").__enter__()  # never closed: no run end to write the buffer
with tk.delegate("billing"):
    pass
with tk.delegate("refunds"):
    raise RuntimeError("the agent broke")
"""


def test_an_exception_that_ends_the_program_loses_no_record(tmp_path: Path) -> None:
    path = tmp_path / "broke.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _ENDS_IN_AN_EXCEPTION, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "the agent broke" in done.stderr
    events = read_jsonl(path)
    assert [type(e).__name__ for e in events] == ["RunStart", "Enter", "Exit", "Enter", "Exit"]
    last = events[-1]
    assert isinstance(last, Exit) and last.status == "error" and last.agent == "refunds"


_FORKS = """
import os, sys
from tracekit.events import Node
from tracekit.sdk import JsonlSink

sink = JsonlSink(sys.argv[1], interval=3600)
sink.emit(Node(ts=1.0, runId="r", id="before-fork"))
pid = os.fork()
sink.emit(Node(ts=1.0, runId="r", id="child" if pid == 0 else "parent"))
if pid == 0:
    sys.exit(0)  # the child's exit flush: its own record, never the parent's
os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_never_writes_the_parents_buffer(tmp_path: Path) -> None:
    path = tmp_path / "forked.jsonl"
    subprocess.run([sys.executable, "-c", _FORKS, str(path)], check=True, timeout=60)
    ids = sorted(e.id for e in read_jsonl(path) if isinstance(e, Node))
    assert ids == ["before-fork", "child", "parent"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_failing_write_is_logged_once_and_the_agent_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = JsonlSink("/dev/full")  # every write fails with ENOSPC
    tk = AgentTracer(sink)
    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"):
        for _ in range(3):
            with tk.run("desk"), tk.delegate("billing"):
                result = 42
        tk.close()
    assert result == 42
    assert sink.dropped == 12 and sink.sent == 0
    messages = [r.getMessage() for r in caplog.records if r.name == "tracekit.sdk"]
    assert len(messages) == 2  # the first failure, then the count at close
    assert "No space left" in messages[0] and "12 records not delivered" in messages[1]


def test_records_keep_their_order_and_fields(tmp_path: Path) -> None:
    path = tmp_path / "order.jsonl"
    with AgentTracer(JsonlSink(path), service="svc") as tk, tk.run("desk", session="c-1"):
        with tk.delegate("billing", node="hand_over"):
            pass
    events = read_jsonl(path)
    assert [e.seq for e in events] == [1, 2, 3, 4]
    start, enter, exit_, end = events
    assert isinstance(start, RunStart) and start.session == "c-1" and start.service == "svc"
    assert isinstance(enter, Enter) and enter.node == "hand_over"
    assert isinstance(exit_, Exit) and exit_.durationMs is not None and exit_.ok
    assert isinstance(end, RunEnd) and end.ok


def test_a_sink_dropped_without_close_writes_what_it_held(tmp_path: Path) -> None:
    path = tmp_path / "dropped.jsonl"
    sink = JsonlSink(path, interval=_NEVER)
    sink.emit(Node(ts=1.0, runId="r", id="decide"))
    assert path.read_bytes() == b""
    del sink
    deadline = time.monotonic() + 30
    # The sink's bound emit makes a cycle: the collector finalises it (once
    # the flush thread, if it is looking at its sinks just now, lets go).
    while gc.collect() >= 0 and path.stat().st_size == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.id for e in read_jsonl(path) if isinstance(e, Node)] == ["decide"]
