"""``tracekit ingest``: a store opened to ingest into, removed again if this command made it for nothing.

A missing file or an input with no trace in it must not leave a new, empty
store behind: the next ``tracekit fleet`` would then report on nothing
instead of saying that there is no store. A store that was there before, or
that received any line (accepted or rejected), is always kept.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from tracekit.store import Store
from tracekit.store.db import default_path

__all__ = ["store_to_ingest_into"]


@contextmanager
def store_to_ingest_into(db: str | None) -> Iterator[Store]:
    """Open (or create) the store; on leaving, remove it if it is new and holds nothing.

    Whether the body ended well or raised, a store this call created and
    into which not one line went is closed and its files deleted.
    """
    path = Path(db) if db is not None else default_path()
    created = not path.exists()
    store = Store(path)
    try:
        yield store
    finally:
        unused = created and _holds_nothing(store)
        store.close()
        if unused:
            _remove(path)
            if sys.exc_info()[0] is None:
                print(f"{path}: no store created, nothing was ingested", file=sys.stderr)


def _holds_nothing(store: Store) -> bool:
    """No record and no rejected line (a failed connection counts as holding something)."""
    try:
        row = store.con.execute(
            "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM rejects)"
        ).fetchone()
    except duckdb.Error:
        return False
    return row is not None and row[0] == 0


def _remove(path: Path) -> None:
    for file in (path, path.with_name(path.name + ".wal")):
        file.unlink(missing_ok=True)
