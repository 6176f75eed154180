"""A consistent copy of the served store, taken between two loads, without stopping the server.

``tracekit export`` (and a periodic lake export) needs the whole store as
of one moment; the server owns the file, and its loader writes it. The
loader is held between two loads while the database file and its
write-ahead log are copied: together they are exactly the committed state,
which DuckDB opens as a store of its own.

Example:
    >>> snapshot_path(Path("fleet.duckdb")).name
    'fleet.duckdb.snapshot'
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from tracekit.server.collector import Collector

__all__ = ["snapshot_path", "snapshot_store"]


def snapshot_path(db: Path) -> Path:
    """``<db>.snapshot``: where :func:`snapshot_store` copies the store by default."""
    return db.with_name(db.name + ".snapshot")


def snapshot_store(collector: Collector, dest: Path | None = None) -> Path:
    """Copy the store as of now to ``dest`` (default :func:`snapshot_path`); return its path.

    Loading waits while the files are copied (reads and acknowledgements go on).

    Raises:
        StoreError: the store is unavailable (a failed write not yet recovered).
        OSError: the copy cannot be written.
    """
    db = collector.store.path
    target = dest or snapshot_path(db)
    tmp = target.with_name(target.name + ".tmp")
    with collector.loader.paused():
        cursor = collector.read_cursor()
        try:
            with contextlib.suppress(duckdb.Error):  # a smaller log to copy; not needed
                cursor.execute("CHECKPOINT")
        finally:
            cursor.close()
        shutil.copyfile(db, tmp)
        _copy_log(_wal(db), _wal(tmp))
    _wal(target).unlink(missing_ok=True)
    if _wal(tmp).exists():
        os.replace(_wal(tmp), _wal(target))
    os.replace(tmp, target)
    return target


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _copy_log(source: Path, target: Path) -> None:
    target.unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        shutil.copyfile(source, target)
