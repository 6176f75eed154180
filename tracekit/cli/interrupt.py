"""Ctrl-C and SIGTERM while a command writes the store: noted, never raised mid-statement.

Python's default handler raises ``KeyboardInterrupt`` wherever the program
is, between a chunk's records and its ``ingest_log`` counts or inside a
query (which DuckDB then reports as a ``RuntimeError``), and SIGTERM ends
the process at once. Instead, the handler here notes the signal and stops
the store's running query (``interrupt()``); the ingest then stops at its
next safe point and leaves the store as it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the handlers are installed before the heavy imports
    import duckdb

__all__ = ["Interrupts", "deferred_interrupts", "leave_on_signals"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """The first SIGINT or SIGTERM received, and the connection whose query it stops."""

    def __init__(self) -> None:
        self._signum = 0
        self._con: duckdb.DuckDBPyConnection | None = None

    def signum(self) -> int:
        """The signal received (0 while none): a ``stop`` for :meth:`Store.ingest`."""
        return self._signum

    def watch(self, con: duckdb.DuckDBPyConnection | None) -> None:
        """Stop this connection's running query on the first signal (None: no query)."""
        self._con = con

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        if self._signum:  # a second Ctrl-C must not cut the clean-up short
            return
        self._signum = signum
        if self._con is not None:
            self._con.interrupt()


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Interrupts]:
    """Note SIGINT and SIGTERM in the block instead of raising; restore the handlers after.

    Outside the main thread (where signals cannot be handled) the block runs
    with the process's handlers unchanged.

    Example:
        >>> with deferred_interrupts() as interrupts:
        ...     interrupts.signum()
        0
    """
    interrupts = Interrupts()
    previous = {}
    try:
        for sig in _SIGNALS:
            previous[sig] = signal.signal(sig, interrupts._note)
    except ValueError:  # not the main thread
        pass
    try:
        yield interrupts
    finally:
        interrupts.watch(None)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def leave_on_signals(*signals: signal.Signals) -> None:
    """End the process at once on these signals, with one line and exit ``128 + signum``.

    For the moments nothing is being written (the command's imports, its
    parse) and for SIGTERM, whose default also ends the process at once, but
    with no word and no exit code a shell reports as 143.
    """
    for sig in signals:
        signal.signal(sig, _leave)


def _leave(signum: int, _frame: FrameType | None) -> None:
    os.write(2, f"interrupted ({signal.Signals(signum).name})\n".encode())
    os._exit(128 + signum)
