"""Where a read command reads: the store file, or the server that holds it.

While ``tracekit serve`` owns a store, DuckDB lets no other process open it;
the read commands then go through the server's API (found from ``--server
URL`` or the store's sidecar, ``<db>.server.json``) and print the same output.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracekit.store.reader import StoreReader

__all__ = ["exported_store", "open_reader", "server_url"]


def server_url(db: str | None, server: str | None) -> str | None:
    """``server`` if given, else the URL of a running server that holds ``db``, else None."""
    if server:
        return server
    from tracekit.server.config import sidecar_path
    from tracekit.store.db import default_path

    path = Path(db) if db is not None else default_path()
    if not sidecar_path(path).exists():  # no server says it holds the store: no HTTP client
        return None
    from tracekit.server.client import server_for

    return server_for(path)


@contextlib.contextmanager
def open_reader(db: str | None, server: str | None, wait: float) -> Iterator[StoreReader]:
    """A :class:`~tracekit.store.Store` opened read-only, or a client of the server holding it.

    Both are a :class:`~tracekit.store.StoreReader`: runs, sql, events,
    rejects, session and find answer alike.
    """
    url = server_url(db, server)
    if url is not None:
        from tracekit.server.client import ServerClient

        yield ServerClient(url)
        return
    from tracekit.store import Store

    with Store(db, read_only=True, wait=wait) as store:
        yield store


@contextlib.contextmanager
def exported_store(db: str | None) -> Iterator[Path]:
    """The store file to export: ``db`` itself, or a snapshot the server holding it takes.

    The snapshot (``<db>.snapshot``) is a consistent copy taken between two
    loads, without stopping the server; it is removed afterwards.
    """
    from tracekit.store.db import default_path

    path = Path(db) if db is not None else default_path()
    url = server_url(db, None)
    if url is None:
        yield path
        return
    from tracekit.server.client import ServerClient

    snapshot = ServerClient(url).snapshot()
    try:
        yield snapshot
    finally:
        for file in (snapshot, snapshot.with_name(snapshot.name + ".wal")):
            file.unlink(missing_ok=True)
