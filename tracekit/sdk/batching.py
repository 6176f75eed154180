"""``BatchingSink``: the one queue, bound, thread and failure policy of every batching sink.

The split is OpenTelemetry's (a ``SpanExporter`` writes a batch, a
``BatchSpanProcessor`` owns the queue and the thread): a :class:`BatchWriter`
only knows how to write one batch of encoded records; the wrapper decides
when. It keeps the queue bounded (past ``max_queue`` the oldest records go,
counted in ``dropped``), writes a batch once ``batch`` records wait (in the
emitting thread, or in a background thread when an ``interval`` is given),
flushes on close and at exit, empties its queue in a forked child (the
parent writes those records; the child must not write them twice), and logs
a writer's first failure once: the agent never sees it.

Example:
    >>> from tracekit.events import Node
    >>> class Lines:
    ...     target = "a list"
    ...     def __init__(self):
    ...         self.batches = []
    ...     def encode(self, event):
    ...         return event.id.encode()
    ...     def write(self, batch):
    ...         self.batches.append(batch)
    ...     def close(self):
    ...         pass
    >>> sink = BatchingSink(Lines(), batch=2)
    >>> for node in ("a", "b", "c"):
    ...     sink.emit(Node(ts=1.0, runId="r", id=node))
    >>> sink.close()
    >>> sink.writer.batches, sink.sent, sink.dropped
    ([[b'a', b'b'], [b'c']], 3, 0)
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections import deque
from typing import Protocol, runtime_checkable

from tracekit._util.text import plural
from tracekit.events import Event

__all__ = ["BatchWriter", "BatchingSink", "RetryLater"]

log = logging.getLogger("tracekit.sdk")


class RetryLater(Exception):
    """Raised by a writer whose batch cannot go now but may later: the batch is kept."""


@runtime_checkable
class BatchWriter(Protocol):
    """Writes batches of encoded records; :class:`BatchingSink` decides when."""

    #: Where the records go, for messages ("run.jsonl", a URL, a store).
    target: str

    def encode(self, event: Event) -> bytes:
        """Encode one record, in the agent's thread (later changes to it do not leak in)."""

    def write(self, batch: list[bytes]) -> None:
        """Write one batch; raise :class:`RetryLater` to keep it, anything else loses it."""

    def close(self) -> None:
        """Release the file, connection or store; called once, after the last write."""


class BatchingSink:
    """A sink (``emit``/``flush``/``close``) that hands a writer batches of records.

    ``batch=1`` without an ``interval`` writes each record as it comes, in
    the caller's thread (nothing is held in memory). Counters: ``sent``
    (records written) and ``dropped`` (queue full, lost by a failing writer,
    emitted after close, or still queued when close gave up); a non-zero
    ``dropped`` is logged at close.

    Args:
        writer: what writes a batch.
        batch: records per write.
        max_queue: records held at most (default: the larger of ``batch`` and 2048).
        interval: when given, a background thread writes what waits every
            ``interval`` seconds (sooner once ``batch`` wait); the caller never waits.
    """

    #: Seconds ``close`` waits for the background thread's write in progress.
    join_timeout = 30.0

    def __init__(
        self,
        writer: BatchWriter,
        *,
        batch: int = 512,
        max_queue: int | None = None,
        interval: float | None = None,
    ) -> None:
        self._max = max(batch, 2048) if max_queue is None else max_queue
        if batch < 1 or self._max < batch:
            raise ValueError("batch must be at least 1 and max_queue at least batch")
        self.writer = writer
        self._encode = writer.encode
        self._write_batch = writer.write
        self.sent = 0
        self.dropped = 0
        self._batch = batch
        self._interval = interval
        self._queue: deque[bytes] = deque()
        self._closed = False
        self._warned = False
        self._thread: threading.Thread | None = None
        self._reinit()
        if interval is None and batch == 1:
            self.emit = self._emit_now  # type: ignore[method-assign]
        _OPEN.add(self)

    def _reinit(self) -> None:
        """Fresh locks and thread (at start, and in a forked child, where both may be stale)."""
        self._lock = threading.Lock()  # guards the queue and the counters
        self._write_lock = threading.Lock()  # one write at a time, batches in order
        self._wake = threading.Event()
        if self._interval is not None and not self._closed:
            name = f"tracekit-{type(self).__name__}"
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()

    # -- the sink protocol -------------------------------------------------
    def emit(self, event: Event) -> None:
        """Queue one record; write a batch once ``batch`` wait (never raises for the writer)."""
        line = self._encode(event)
        with self._lock:
            queue = self._queue
            if self._closed or len(queue) >= self._max:
                late: bool | None = self._closed
                self.dropped += 1
                if not late:
                    queue.popleft()
                    queue.append(line)
            else:
                late = None
                queue.append(line)
                if len(queue) < self._batch:
                    return
        if late is not None:
            self._warn("closed, dropping records" if late else "queue full, dropping the oldest")
            if late or len(queue) < self._batch:
                return
        if self._thread is not None:
            self._wake.set()
        else:
            self._write_next(full_only=True)

    def _emit_now(self, event: Event) -> None:
        line = self._encode(event)
        if self._closed:
            self._drop_late()
            return
        with self._write_lock:  # _write, inlined: one record per call is the default hot path
            try:
                self._write_batch([line])
            except Exception as exc:
                self._failed([line], exc)
                return
            self.sent += 1

    def _drop_late(self) -> None:
        with self._lock:
            self.dropped += 1
        self._warn("closed, dropping records")

    def flush(self) -> None:
        """Write everything queued now; a batch the writer defers stays queued."""
        while self._write_next(full_only=False):
            pass

    def close(self) -> None:
        """Flush, stop the thread, close the writer; what is left is counted dropped."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _OPEN.discard(self)
        if self._thread is not None:
            self._wake.set()
            self._thread.join(self.join_timeout)
        self.flush()
        with self._lock:
            self.dropped += len(self._queue)
            self._queue.clear()
        try:
            self.writer.close()
        except Exception as exc:
            self._warn(f"closing failed ({type(exc).__name__}: {exc})")
        if self.dropped:  # the one figure the agent's operator needs at the end
            log.warning(
                "tracekit %s: %s not delivered to %s (%s sent)",
                type(self).__name__,
                plural(self.dropped, "record"),
                self.writer.target,
                self.sent,
            )

    # -- writing -----------------------------------------------------------
    def _run(self) -> None:
        assert self._interval is not None
        while not self._closed:
            self._wake.wait(self._interval)
            self._wake.clear()
            while not self._closed and self._write_next(full_only=False):
                pass

    def _write_next(self, *, full_only: bool) -> bool:
        """Write the oldest batch; True if more may be written now."""
        with self._write_lock:  # taken before the batch, so batches go out in order
            with self._lock:
                size = min(self._batch, len(self._queue))
                if not size or (full_only and size < self._batch):
                    return False
                if size == len(self._queue):
                    lines = list(self._queue)
                    self._queue.clear()
                else:
                    lines = [self._queue.popleft() for _ in range(size)]
            return self._write(lines)

    def _write(self, lines: list[bytes]) -> bool:
        """Hand one batch to the writer (the write lock held); False if it was deferred."""
        try:
            self._write_batch(lines)
        except Exception as exc:
            return self._failed(lines, exc)
        self.sent += len(lines)  # only ever changed under the write lock
        return True

    def _failed(self, lines: list[bytes], exc: Exception) -> bool:
        """Keep a deferred batch, count a lost one; log the first failure. False if deferred."""
        if isinstance(exc, RetryLater):
            self._requeue(lines)
            self._warn(str(exc))
            return False
        with self._lock:  # instrumentation never breaks the agent it watches
            self.dropped += len(lines)
        self._warn(f"writing failed ({type(exc).__name__}: {exc})")
        return True

    def _requeue(self, lines: list[bytes]) -> None:
        with self._lock:  # back to the front, in order, still bounded: the oldest go first
            room = max(self._max - len(self._queue), 0)
            kept = lines[len(lines) - room :] if room < len(lines) else lines
            self.dropped += len(lines) - len(kept)
            self._queue.extendleft(reversed(kept))

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("tracekit %s: %s; carrying on (logged once)", type(self).__name__, message)


#: Sinks still open: flushed at exit, emptied in a forked child.
_OPEN: weakref.WeakSet[BatchingSink] = weakref.WeakSet()


def _flush_open() -> None:
    for sink in list(_OPEN):
        try:
            sink.flush()
        except Exception:  # at exit there is no agent left to protect, only others' sinks
            continue


def _forget_in_child() -> None:
    for sink in list(_OPEN):
        sink._queue = deque()
        sink._reinit()


atexit.register(_flush_open)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
