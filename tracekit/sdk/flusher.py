"""One background thread that writes what buffered sinks hold, every few tenths of a second.

A buffered sink (the default :class:`~tracekit.sdk.JsonlSink`) writes when
its buffer is full and when a top-level run ends; this thread bounds how long
a record can wait otherwise (an agent that hangs, a subagent still running
after its run). One thread serves every sink of the process: it calls each
sink's ``flush`` every ``sink.interval`` seconds, sleeping until the next one
is due. It is a daemon: the exit flush is ``atexit``'s, not its.

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

import contextlib
import os
import threading
import time
import weakref
from typing import Protocol

__all__ = ["forget", "watch"]


class _Flushable(Protocol):
    interval: float

    def flush(self) -> None: ...


#: Each watched sink and when its next flush is due (``time.monotonic``).
_SINKS: weakref.WeakKeyDictionary[_Flushable, float] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_thread: threading.Thread | None = None
_wake = threading.Event()


def watch(sink: _Flushable) -> None:
    """Flush ``sink`` every ``sink.interval`` seconds from the shared thread (started here)."""
    global _thread
    with _lock:
        _SINKS[sink] = time.monotonic() + sink.interval
        if _thread is None:
            _thread = threading.Thread(target=_run, name="tracekit-flush", daemon=True)
            _thread.start()
        else:
            _wake.set()  # a sooner due time takes effect now


def forget(sink: _Flushable) -> None:
    """Stop flushing ``sink`` (it closed)."""
    with _lock:
        _SINKS.pop(sink, None)


def _run() -> None:
    while True:
        _wake.wait(_flush_due())
        _wake.clear()


def _flush_due() -> float:
    """Flush the sinks whose time has come; the seconds until the next one is due.

    Its own frame: no sink stays referenced while the thread waits, so a sink
    dropped without ``close()`` can be finalised (and write what it holds).
    """
    now = time.monotonic()
    wait = 1.0
    for sink, due in list(_SINKS.items()):
        if due <= now:
            with contextlib.suppress(Exception):  # a sink logs its own failures
                sink.flush()
            due = now + sink.interval
            with _lock:
                if sink in _SINKS:  # not forgotten meanwhile
                    _SINKS[sink] = due
        wait = min(wait, due - now)
    return max(wait, 0.0)


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
