"""Where records go: a JSONL file, a list in memory, or any object with the protocol.

A sink is any object with ``emit(event)``, ``flush()`` and ``close()``; the
store's ``StoreSink`` is one. The span processor shields the agent from a
sink that raises: it logs the first failure and carries on. The file, the
HTTP and the store sinks are each a writer of one batch behind the same
:class:`~tracekit.sdk.batching.BatchingSink`.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

import msgspec

from tracekit.errors import TraceFileError
from tracekit.events import Event, Exit, RunEnd
from tracekit.sdk import flusher
from tracekit.sdk.batching import BatchingSink

__all__ = ["JsonlSink", "MemorySink", "Sink"]

_ENCODER: Final = msgspec.json.Encoder()
_ENCODE: Final = _ENCODER.encode
#: A buffered sink writes once it holds this many records (about 64 KiB).
_BUFFER_RECORDS: Final = 256
#: The longest a record waits in a buffered sink, in seconds.
FLUSH_INTERVAL: Final = 0.2
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
        self.write_bytes(batch[0] + b"\n" if len(batch) == 1 else b"\n".join([*batch, b""]))

    def write_bytes(self, data: bytes | bytearray) -> None:
        """Write whole lines in one ``os.write`` (finishing a short one)."""
        fd = self._fd
        if fd is None:
            raise OSError(f"{self.target}: sink is closed")
        done = os.write(fd, data)
        if done < len(data):
            self.finish(data, done)

    def finish(self, data: bytes | bytearray, done: int) -> None:
        """Finish a short write (a full disk or a signal) rather than leave half a line."""
        view = memoryview(data)
        while done < len(data):
            done += os.write(self._fd, view[done:])  # type: ignore[arg-type]

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class JsonlSink(BatchingSink):
    """Append records to a JSONL file, whole lines only, buffered by default.

    The file is opened with ``O_APPEND``, so lines from several threads or
    processes writing the same file never interleave: each write of whole
    lines lands at the end as one piece.

    By default records are encoded into a buffer in memory and written with
    one ``os.write`` when the buffer holds 256 records (about 64 KiB), when a
    top-level run or invocation ends (its ``run.end``, or an ``exit`` without
    a parent run),
    every ``interval`` seconds from a shared background thread, and at
    ``flush()``, ``close()`` and interpreter exit (an exception that ends the
    program included). A process killed without running its exit handlers
    (``SIGKILL``, an unhandled ``SIGTERM``, ``os._exit``) loses at most the
    records of its last ``interval``; the file still holds whole lines only.
    ``batch=1`` writes every record at once (a crash loses at most part of
    the last line) for about 0.2x of a bare span more per invocation; ``batch=N``
    writes every N records, and only at close, exit or ``flush()`` otherwise.
    Buffered lines are forgotten in a forked child (the parent writes them).
    A write that fails is logged once and its records counted in ``dropped``.

    Args:
        path: the file; created if missing, never truncated.
        batch: None (the default) for the buffer above; 1 to write every
            record at once; N to write every N records.
        interval: the longest a buffered record waits, in seconds (default 0.2).

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

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        batch: int | None = None,
        interval: float = FLUSH_INTERVAL,
    ) -> None:
        if batch is not None and batch < 1:
            raise ValueError("batch must be at least 1")
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.path = Path(path)
        self.interval = interval
        self._file = _JsonlWriter(self.path)
        super().__init__(self._file, batch=batch or 1)
        if batch == 1:
            self.emit = self._emit_direct  # type: ignore[method-assign]
        elif batch is None:
            self.emit = self._emit_buffered  # type: ignore[method-assign]
            flusher.watch(self)

    def _reinit(self) -> None:
        # At start and in a forked child: the parent writes what it buffered.
        self._lines: deque[bytes] = deque()
        super()._reinit()

    def _emit_direct(self, event: Event) -> None:
        # One line per os.write, written here rather than as the writer's
        # batch of one: that call costs ~2.5% of a bare span.
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

    def _emit_buffered(self, event: Event) -> None:
        # No lock: deque.append is atomic, and the writer pops lines one by one,
        # so a line appended meanwhile waits for the next write, in order.
        if self._closed:
            self._drop_late()
            return
        lines = self._lines
        lines.append(_ENCODE(event))
        kind = type(event)
        if (
            len(lines) >= _BUFFER_RECORDS
            or kind is RunEnd
            or (kind is Exit and event.parentRunId is None)  # type: ignore[union-attr]
        ):
            self._write_buffer()

    def _write_buffer(self) -> None:
        """Write what is buffered in one piece; a failure loses it, logged once."""
        with self._write_lock:  # one writer at a time: lines reach the file in order
            lines = self._lines
            popleft = lines.popleft
            batch = [popleft() for _ in range(len(lines))]
            if not batch:
                return
            try:
                self._file.write(batch)
            except Exception as exc:
                self._failed(batch, exc)
                return
            self.sent += len(batch)  # only ever changed under the write lock

    def flush(self) -> None:
        """Write every buffered record now."""
        if self._lines:
            self._write_buffer()
        super().flush()

    def __del__(self) -> None:
        # A sink dropped without close(): write what it holds rather than lose it.
        if getattr(self, "_lines", None):
            try:  # noqa: SIM105 (contextlib.suppress may be gone at interpreter exit)
                self._write_buffer()
            except Exception:
                pass

    def close(self) -> None:
        """Write what is buffered, then close the file; later records are dropped."""
        flusher.forget(self)
        super().close()
        late = len(self._lines)  # emitted while closing, after the last write
        if late:
            self._lines.clear()
            with self._lock:
                self.dropped += late
