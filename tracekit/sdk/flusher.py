"""One background thread that writes what buffered sinks hold, every few tenths of a second.

A buffered sink (the default :class:`~tracekit.sdk.JsonlSink`) writes when
its buffer is full and when a top-level run ends; this thread bounds how long
a record can wait otherwise (an agent that hangs, a subagent still running
after its run). One thread serves every sink of the process: it wakes every
``interval`` seconds (the smallest any sink asked for) and calls each sink's
``flush``. It is a daemon: the exit flush is ``atexit``'s, not its.

Example:
    >>> class Held:
    ...     interval = 0.05
    ...     flushed = 0
    ...     def flush(self):
    ...         self.flushed += 1
    >>> held = Held()
    >>> watch(held)
    >>> import time; time.sleep(0.3)
    >>> held.flushed > 0
    True
    >>> forget(held)
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

__all__ = ["forget", "watch"]


class _Flushable(Protocol):
    interval: float

    def flush(self) -> None: ...


_SINKS: weakref.WeakSet[_Flushable] = weakref.WeakSet()
_lock = threading.Lock()
_thread: threading.Thread | None = None
_wake = threading.Event()


def watch(sink: _Flushable) -> None:
    """Flush ``sink`` every ``sink.interval`` seconds from the shared thread (started here)."""
    global _thread
    with _lock:
        _SINKS.add(sink)
        if _thread is None:
            _thread = threading.Thread(target=_run, name="tracekit-flush", daemon=True)
            _thread.start()
        else:
            _wake.set()  # a shorter interval takes effect now


def forget(sink: _Flushable) -> None:
    """Stop flushing ``sink`` (it closed)."""
    with _lock:
        _SINKS.discard(sink)


def _run() -> None:
    while True:
        sinks = list(_SINKS)
        interval = min((s.interval for s in sinks), default=1.0)
        _wake.wait(interval)
        _wake.clear()
        for sink in sinks:
            try:
                sink.flush()
            except Exception:  # a sink logs its own failures; the thread must live
                continue
        del sinks  # a sink closed and dropped meanwhile is not kept alive here


def _restart_in_child() -> None:
    """A forked child has no thread: start one if the child has buffered sinks.

    Registered after the batching sinks' own fork hook (imported first), so
    the sinks' locks and buffers are fresh before this thread can touch them.
    """
    global _thread, _lock, _wake
    _lock, _wake = threading.Lock(), threading.Event()
    _thread = None
    if len(_SINKS):
        _thread = threading.Thread(target=_run, name="tracekit-flush", daemon=True)
        _thread.start()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_restart_in_child)
