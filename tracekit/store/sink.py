"""``StoreSink``: the SDK writes straight into a store, in batches.

Example:
    >>> from tracekit import AgentTracer, StoreSink
    >>> with AgentTracer(StoreSink("fleet.duckdb"), service="front-desk") as tk:
    ...     with tk.run("front_desk"):
    ...         with tk.delegate("billing", node="hand_over"):
    ...             pass
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     runs = store.runs(agent="front_desk")
    >>> runs[["agent", "service", "invocations", "outcome"]]
            agent     service  invocations outcome
    0  front_desk  front-desk            1      ok
"""

from __future__ import annotations

import os
import threading

from tracekit.events import Event, encode_event
from tracekit.store.store import Store

__all__ = ["StoreSink"]


class StoreSink:
    """A sink (``emit``/``flush``/``close``) that appends records to a store.

    Records are buffered and ingested ``batch`` at a time, each flush one
    ingest (its own ``ingest_log`` row, source ``sdk:<pid>``): the same
    checks, duplicate counting and derived tables as ``tracekit ingest``. The
    sink holds the store open for writing until ``close``; another process
    that ingests meanwhile gets :class:`~tracekit.errors.StoreLockedError`.

    Args:
        store: a :class:`Store` opened for writing, or a path (opened here
            and closed by :meth:`close`); None for ``$TRACEKIT_DB``.
        batch: records per ingest.
    """

    def __init__(
        self, store: Store | str | os.PathLike[str] | None = None, *, batch: int = 1000
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self._owned = not isinstance(store, Store)
        self.store = store if isinstance(store, Store) else Store(store)
        self.source = f"sdk:{os.getpid()}"
        self._batch = batch
        self._pending: list[bytes] = []
        self._next_line = 1
        self._lock = threading.Lock()
        self._closed = False

    def emit(self, event: Event) -> None:
        """Buffer one record; ingest the buffer once it holds ``batch`` records."""
        line = encode_event(event)
        with self._lock:
            self._pending.append(line)
            full = len(self._pending) >= self._batch
        if full:
            self.flush()

    def flush(self) -> None:
        """Ingest whatever is buffered."""
        with self._lock:
            if not self._pending or self._closed:
                return
            lines, self._pending = self._pending, []
            first, self._next_line = self._next_line, self._next_line + len(lines)
            self.store.ingest_records(lines, source=self.source, first_line=first)

    def close(self) -> None:
        """Flush, then close the store if this sink opened it."""
        self.flush()
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._owned:
            self.store.close()
