"""A watch on the server's memory while reads run: past the cap, the reads are stopped.

DuckDB keeps its own work within its memory limit (400 MB on a served store),
but not every value a query builds (a string aggregated from millions of rows
is built outside it). While any read runs, a thread looks at the process's resident memory
every 100 ms; past ``cap`` bytes it interrupts every running read, which then
answers 503 with the reason, and ingest goes on.

Example:
    >>> guard = MemoryGuard(cap=1 << 40)
    >>> resident_bytes() > 0
    True
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["MemoryGuard", "MemoryStoppedError", "resident_bytes"]

log = logging.getLogger("tracekit.server")

_EVERY: Final = 0.1
_PAGE: Final = os.sysconf("SC_PAGE_SIZE")


class MemoryStoppedError(Exception):
    """A read was stopped because the server's memory passed its cap: 503."""


def resident_bytes() -> int:
    """The process's resident memory now (Linux ``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm", "rb") as stat:
            return int(stat.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class _Watch:
    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.tripped = False


class MemoryGuard:
    """Interrupts the reads it watches once resident memory passes ``cap`` bytes."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._watches: set[_Watch] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watch(self, cursor: Any) -> Iterator[None]:
        """Run a read on ``cursor`` under the cap.

        Raises:
            MemoryStoppedError: the read failed after the guard interrupted it.
        """
        entry = _Watch(cursor)
        with self._lock:
            self._watches.add(entry)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True)
                self._thread.start()
        try:
            yield
        except Exception:
            if entry.tripped:
                raise MemoryStoppedError(
                    f"the read was stopped: the server's memory passed {self.cap >> 20} MiB"
                ) from None
            raise
        finally:
            with self._lock:
                self._watches.discard(entry)

    def _run(self) -> None:
        stop = threading.Event()
        while not stop.wait(_EVERY):
            with self._lock:
                if not self._watches:
                    self._thread = None
                    return
                if resident_bytes() <= self.cap:
                    continue
                log.warning(
                    "memory over %d MiB: stopping %d reads", self.cap >> 20, len(self._watches)
                )
                for entry in self._watches:
                    entry.tripped = True
                    entry.cursor.interrupt()
