"""``BatchingSink``: the bound and its drop count, flush on close and at exit, a failing writer."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tracekit.events import Event, Node
from tracekit.sdk import AgentTracer, BatchingSink, BatchWriter, RetryLater


class _Recorder:
    """A writer that keeps its batches; ``fail`` makes the next writes raise it."""

    target = "memory"

    def __init__(self) -> None:
        self.batches: list[list[bytes]] = []
        self.fail: Exception | None = None
        self.closed = 0
        self.threads: set[str] = set()

    def encode(self, event: Event) -> bytes:
        return str(getattr(event, "id", type(event).__name__)).encode()

    def write(self, batch: list[bytes]) -> None:
        self.threads.add(threading.current_thread().name)
        if self.fail is not None:
            raise self.fail
        self.batches.append(batch)

    def close(self) -> None:
        self.closed += 1

    @property
    def written(self) -> list[bytes]:
        return [line for batch in self.batches for line in batch]


def _emit(sink: BatchingSink, *ids: str) -> None:
    for node in ids:
        sink.emit(Node(ts=1.0, runId="r", id=node))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tracekit.sdk"]


def test_batches_are_written_when_full_and_the_rest_on_close() -> None:
    writer = _Recorder()
    assert isinstance(writer, BatchWriter)
    sink = BatchingSink(writer, batch=3)
    _emit(sink, *"abcdefg")
    assert writer.batches == [[b"a", b"b", b"c"], [b"d", b"e", b"f"]]
    sink.close()
    sink.close()  # twice is harmless
    assert writer.batches[-1] == [b"g"] and writer.closed == 1
    assert (sink.sent, sink.dropped) == (7, 0)


def test_the_bound_drops_the_oldest_and_counts_them(caplog: pytest.LogCaptureFixture) -> None:
    writer = _Recorder()
    writer.fail = RetryLater("the server is down")
    sink = BatchingSink(writer, batch=2, max_queue=4)
    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"):
        _emit(sink, *"abcdefgh")  # every write deferred: the queue holds the newest four
        writer.fail = None
        sink.flush()
        assert writer.written == [b"e", b"f", b"g", b"h"]
        sink.close()
    assert (sink.sent, sink.dropped) == (4, 4)
    warnings = _warnings(caplog)
    assert warnings[0] == "tracekit BatchingSink: the server is down; carrying on (logged once)"
    assert warnings[1:] == ["tracekit BatchingSink: 4 records not delivered to memory (4 sent)"]


def test_a_writer_that_raises_is_logged_once_and_the_agent_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = _Recorder()
    writer.fail = OSError(28, "No space left on device")
    sink = BatchingSink(writer, batch=1)
    tk = AgentTracer(sink)
    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"), tk.run("desk"):
        for _ in range(3):
            with tk.delegate("billing"):
                pass
    tk.close()
    assert (sink.sent, sink.dropped) == (0, 8)
    warnings = _warnings(caplog)
    assert len(warnings) == 2 and "No space left on device" in warnings[0]
    assert warnings[1].startswith("tracekit BatchingSink: 8 records not delivered")


def test_records_after_close_are_dropped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    sink = BatchingSink(_Recorder(), batch=5)
    sink.close()
    with caplog.at_level(logging.WARNING, logger="tracekit.sdk"):
        _emit(sink, "late", "later")
    assert sink.dropped == 2 and len(_warnings(caplog)) == 1


def test_the_background_thread_writes_without_the_caller() -> None:
    writer = _Recorder()
    sink = BatchingSink(writer, batch=2, interval=30.0)
    _emit(sink, "a", "b")  # a full batch wakes the thread at once, long before the interval
    deadline = time.monotonic() + 10
    while not writer.batches and time.monotonic() < deadline:
        time.sleep(0.005)
    assert writer.batches == [[b"a", b"b"]]
    assert writer.threads == {"tracekit-BatchingSink"}
    _emit(sink, "c")
    sink.close()
    assert writer.written == [b"a", b"b", b"c"] and sink.sent == 3


def test_a_bound_below_the_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="max_queue at least batch"):
        BatchingSink(_Recorder(), batch=10, max_queue=5)


_AT_EXIT_AND_FORK = """
import os, sys
from tracekit.events import Node
from tracekit.sdk import BatchingSink

class Append:
    target = sys.argv[1]
    def encode(self, event):
        return f"{event.id} {os.getpid()}\\n".encode()
    def write(self, batch):
        with open(self.target, "ab") as f:
            f.write(b"".join(batch))
    def close(self):
        pass

sink = BatchingSink(Append(), batch=100)
sink.emit(Node(ts=1.0, runId="r", id="before-fork"))
pid = os.fork()
sink.emit(Node(ts=1.0, runId="r", id="child" if pid == 0 else "parent"))
if pid == 0:
    sys.exit(0)  # runs the at-exit flush, in the child too
os.waitpid(pid, 0)
# no close(): what is queued is written at exit
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_queued_records_are_written_at_exit_once_across_a_fork(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    script = tmp_path / "prog.py"
    script.write_text(_AT_EXIT_AND_FORK)
    subprocess.run([sys.executable, str(script), str(path)], check=True, timeout=60)
    lines = sorted(line.split()[0] for line in path.read_text().splitlines())
    assert lines == ["before-fork", "child", "parent"]  # the child never writes the parent's
