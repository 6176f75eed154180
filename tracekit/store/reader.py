"""What every read command needs from a store: one typed interface, two implementations.

:class:`~tracekit.store.Store` answers it from the file; while ``tracekit
serve`` holds the file, :class:`tracekit.server.client.ServerClient` answers
it through the server's API with the same types, so a command is written
once against :class:`StoreReader` and works either way.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     isinstance(store, StoreReader)
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

    from tracekit.events import Event
    from tracekit.store.cause import RootCause
    from tracekit.store.find import FindResult

__all__ = ["StoreReader"]


@runtime_checkable
class StoreReader(Protocol):
    """The reads a store answers: runs, SQL, a run's records, rejects, sessions, find."""

    def runs(
        self,
        *,
        status: str | None = None,
        service: str | None = None,
        agent: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        session: str | None = None,
    ) -> pd.DataFrame:
        """The root runs, newest first."""
        ...

    def sql(self, query: str) -> pd.DataFrame:
        """One read-only SELECT."""
        ...

    def events(self, run_id: str) -> list[Event]:
        """The v1 records of a run's whole tree."""
        ...

    def root_cause(self, run_id: str) -> RootCause | None:
        """Why a root run ended as it did; None for a child run."""
        ...

    def rejects(self, limit: int | None = None) -> pd.DataFrame:
        """The lines that could not be read, oldest first."""
        ...

    def session(self, session_id: str) -> pd.DataFrame:
        """The runs of one session, oldest first."""
        ...

    def find(self, query: str, *, limit: int | None = None) -> FindResult:
        """Runs and paths matching a structural query."""
        ...
