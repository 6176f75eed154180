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

from tracekit.events import Event, encode_event
from tracekit.sdk.batching import BatchingSink
from tracekit.store.store import Store

__all__ = ["StoreSink"]


class _StoreWriter:
    """Ingests a batch of records into a store: one ingest (one transaction) per batch."""

    def __init__(self, store: Store, *, owned: bool) -> None:
        self.store = store
        self.source = f"sdk:{os.getpid()}"
        self.target = str(store.path)
        self._owned = owned
        self._next_line = 1

    def encode(self, event: Event) -> bytes:
        return encode_event(event)

    def write(self, batch: list[bytes]) -> None:
        first, self._next_line = self._next_line, self._next_line + len(batch)
        self.store.ingest_records(batch, source=self.source, first_line=first)

    def close(self) -> None:
        if self._owned:
            self.store.close()


class StoreSink(BatchingSink):
    """A sink (``emit``/``flush``/``close``) that appends records to a store.

    Records are queued and ingested ``batch`` at a time, each write one
    ingest (one transaction, its own ``ingest_log`` row, source
    ``sdk:<pid>``): the same checks, duplicate counting and derived tables as
    ``tracekit ingest``. The sink holds the store open for writing until
    ``close``; another process that ingests meanwhile gets
    :class:`~tracekit.errors.StoreLockedError`. An ingest that fails is
    logged once and its records counted in ``dropped``; the agent carries on.

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
        owned = not isinstance(store, Store)
        self.store = store if isinstance(store, Store) else Store(store)
        writer = _StoreWriter(self.store, owned=owned)
        self.source = writer.source
        super().__init__(writer, batch=batch)
