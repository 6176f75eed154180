"""Where records go: a JSONL file, a list in memory, or any object with the protocol.

A sink is any object with ``emit(event)``, ``flush()`` and ``close()``; the
store's ``StoreSink`` is one. The span processor shields the agent from a
sink that raises: it logs the first failure and carries on.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

import msgspec

from tracekit.errors import TraceFileError
from tracekit.events import Event

__all__ = ["JsonlSink", "MemorySink", "Sink"]

_ENCODER: Final = msgspec.json.Encoder()
_FLAGS: Final = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


@runtime_checkable
class Sink(Protocol):
    """What the span processor writes records to."""

    def emit(self, event: Event) -> None:
        """Take one record; may buffer it."""

    def flush(self) -> None:
        """Make every record taken so far durable or visible."""

    def close(self) -> None:
        """Flush and release resources; later records may be dropped."""


class MemorySink:
    """Keep records in a list, for tests and notebooks.

    Example:
        >>> from tracekit.events import Node
        >>> sink = MemorySink()
        >>> sink.emit(Node(ts=1.0, runId="r", id="decide"))
        >>> [e.id for e in sink.events]
        ['decide']
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        # list.append is atomic under the GIL: no lock on the hot path.
        self.emit = self.events.append  # type: ignore[method-assign,assignment]

    def emit(self, event: Event) -> None:  # replaced per instance in __init__
        self.events.append(event)

    def flush(self) -> None:
        """Nothing to flush."""

    def close(self) -> None:
        """Nothing to close; the records stay readable."""


class JsonlSink:
    """Append records to a JSONL file, one whole line per ``os.write``.

    The file is opened with ``O_APPEND``, so lines from several threads or
    processes writing the same file never interleave: each write of a whole
    line lands at the end as one piece. By default every record is written
    at once (a crash loses at most part of the last line); ``batch=N`` keeps
    up to N lines in memory and writes them together, which is cheaper but
    loses the unwritten lines if the process dies.

    Args:
        path: the file; created if missing, never truncated.
        batch: write every N records instead of every record (1 = no batching).

    Raises:
        TraceFileError: the file cannot be opened for appending.

    Example:
        >>> from tracekit.events import Node
        >>> sink = JsonlSink("run.jsonl")
        >>> sink.emit(Node(ts=1.0, runId="r", id="decide"))
        >>> sink.close()
        >>> print(Path("run.jsonl").read_text(), end="")
        {"type":"node","ts":1.0,"runId":"r","id":"decide"}
    """

    def __init__(self, path: str | os.PathLike[str], *, batch: int = 1) -> None:
        self.path = Path(path)
        if batch < 1:
            raise ValueError("batch must be at least 1")
        try:
            self._fd: int | None = os.open(self.path, _FLAGS, 0o644)
        except OSError as exc:
            raise TraceFileError(str(path), f"cannot open for appending ({exc.strerror})") from exc
        self._batch = batch
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        if batch == 1:
            self.emit = self._emit_now  # type: ignore[method-assign]
        else:
            _BATCHED.add(self)

    def emit(self, event: Event) -> None:
        """Encode ``event`` and write it (or queue it when batching)."""
        line = _ENCODER.encode(event) + b"\n"
        with self._lock:
            self._pending.append(line)
            if len(self._pending) < self._batch:
                return
            data, self._pending = b"".join(self._pending), []
        self._write(data)

    def _emit_now(self, event: Event) -> None:
        data = _ENCODER.encode(event) + b"\n"
        if self._fd is None:
            raise OSError(f"{self.path}: sink is closed")
        written = os.write(self._fd, data)
        if written < len(data):
            self._write(data, written)

    def _write(self, data: bytes, done: int = 0) -> None:
        fd = self._fd
        if fd is None:
            raise OSError(f"{self.path}: sink is closed")
        # A short write only happens when the disk is full or a signal hits;
        # finish the line rather than leave half of it.
        while done < len(data):
            done += os.write(fd, data[done:])

    def flush(self) -> None:
        """Write any batched lines now."""
        with self._lock:
            data, self._pending = b"".join(self._pending), []
        if data:
            self._write(data)

    def close(self) -> None:
        """Flush and close the file; closing twice is harmless."""
        if self._fd is None:
            return
        try:
            self.flush()
        finally:
            fd, self._fd = self._fd, None
            os.close(fd)


#: Batching sinks still open: flushed at exit, emptied in a forked child (the
#: parent writes its own lines; the child must not write them a second time).
_BATCHED: weakref.WeakSet[JsonlSink] = weakref.WeakSet()


def _flush_batched() -> None:
    for sink in list(_BATCHED):
        try:
            sink.flush()
        except Exception:  # at exit there is no agent left to protect, only others' sinks
            continue


def _forget_batched() -> None:
    for sink in list(_BATCHED):
        sink._pending = []


atexit.register(_flush_batched)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_batched)
