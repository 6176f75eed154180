"""Where records go: a JSONL file, a list in memory, or any object with the protocol.

A sink is any object with ``emit(event)``, ``flush()`` and ``close()``; the
store's ``StoreSink`` is one. The span processor shields the agent from a
sink that raises: it logs the first failure and carries on. The file, the
HTTP and the store sinks are each a writer of one batch behind the same
:class:`~tracekit.sdk.batching.BatchingSink`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

import msgspec

from tracekit.errors import TraceFileError
from tracekit.events import Event
from tracekit.sdk.batching import BatchingSink

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


class _JsonlWriter:
    """Writes a batch of lines to a file opened with ``O_APPEND``, in one ``os.write``."""

    def __init__(self, path: Path) -> None:
        self.target = str(path)
        try:
            self._fd: int | None = os.open(path, _FLAGS, 0o644)
        except OSError as exc:
            raise TraceFileError(str(path), f"cannot open for appending ({exc.strerror})") from exc

    #: One line without its newline; a C call, no Python frame on the hot path.
    encode = staticmethod(_ENCODER.encode)

    def write(self, batch: list[bytes]) -> None:
        fd = self._fd
        if fd is None:
            raise OSError(f"{self.target}: sink is closed")
        data = batch[0] + b"\n" if len(batch) == 1 else b"\n".join([*batch, b""])
        done = os.write(fd, data)
        if done < len(data):
            self.finish(data, done)

    def finish(self, data: bytes, done: int) -> None:
        """Finish a short write (a full disk or a signal) rather than leave half a line."""
        while done < len(data):
            done += os.write(self._fd, data[done:])  # type: ignore[arg-type]

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class JsonlSink(BatchingSink):
    """Append records to a JSONL file, one whole line per ``os.write``.

    The file is opened with ``O_APPEND``, so lines from several threads or
    processes writing the same file never interleave: each write of whole
    lines lands at the end as one piece. By default every record is written
    at once (a crash loses at most part of the last line); ``batch=N`` keeps
    up to N lines in memory and writes them together, which is cheaper but
    loses the unwritten lines if the process dies. Queued lines are written
    at close and at exit, and forgotten in a forked child (the parent writes
    them). A write that fails is logged once and counted in ``dropped``.

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
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.path = Path(path)
        self._file = _JsonlWriter(self.path)
        super().__init__(self._file, batch=batch)
        if batch == 1:
            self.emit = self._emit_direct  # type: ignore[method-assign]

    def _emit_direct(self, event: Event) -> None:
        # The default path, one line per os.write, written here rather than as
        # the writer's batch of one: that call costs ~2.5% of a bare span.
        data = _ENCODER.encode(event) + b"\n"
        fd = self._file._fd
        if fd is None or self._closed:
            self._drop_late()
            return
        try:
            done = os.write(fd, data)
            if done < len(data):
                self._file.finish(data, done)
        except Exception as exc:
            self._failed([data[:-1]], exc)
            return
        self.sent += 1  # no call between read and store: the GIL keeps it whole
