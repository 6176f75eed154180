"""Opening a store file: the lock, the migrations and the engine settings."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import duckdb

from tracekit._util.files import is_store_file
from tracekit.errors import StoreError
from tracekit.store.lock import lock_error, retry_locked
from tracekit.store.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = ["DEFAULT_DB", "NOTICES", "connect", "default_path", "take_notices"]

DEFAULT_DB = "tracekit.duckdb"

# DuckDB's default is 80% of RAM; a bounded limit keeps a multi-gigabyte
# ingest under 2 GB of RSS by spilling joins and sorts to disk instead.
_MEMORY_LIMIT = os.environ.get("TRACEKIT_DB_MEMORY", "1GB")


def default_path() -> Path:
    """Return ``$TRACEKIT_DB`` or ``./tracekit.duckdb``."""
    return Path(os.environ.get("TRACEKIT_DB") or DEFAULT_DB)


def connect(path: Path, *, read_only: bool = False, wait: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open (and create or migrate, unless read-only) the store at ``path``.

    DuckDB never reads or writes a file on a query's behalf here (external
    access is off: ingest hands it Arrow tables). A read-only connection also
    has its configuration locked, so no statement can change its settings.

    Args:
        path: the store file.
        read_only: open for reading only (several readers may share a file).
        wait: seconds to keep trying while another process holds the file.

    Raises:
        StoreLockedError: another process holds the store (after ``wait``).
        StoreError: the file is missing (read-only) or not a DuckDB store.
    """
    if read_only and not path.exists():
        raise StoreError(
            f"{path}: no store here", hint="Create one with: tracekit ingest TRACES --db FILE"
        )
    if path.is_file() and path.stat().st_size and not is_store_file(path):
        raise StoreError(
            f"{path}: not a tracekit store (a store is a DuckDB file; is this a trace?)",
            hint=f"Read a trace with: tracekit tree {path}; store it with:"
            f" tracekit ingest {path} --db {DEFAULT_DB}",
        )
    con = retry_locked(lambda: _open(path, read_only), wait)
    _migrate(con, path, read_only=read_only)
    return con


def _open(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    # Settings go in at connect time: a locked configuration takes no SET afterwards.
    config: dict[str, str | bool | int | float | list[str]] = {
        "memory_limit": _MEMORY_LIMIT,
        "preserve_insertion_order": False,
        "enable_external_access": False,
    }
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise lock_error(path, str(exc)) from None
        raise StoreError(f"{path}: cannot open the store ({_first_line(exc)})") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open the store ({_first_line(exc)})") from None
    # DuckDB's own bar would print on stdout during a slow statement, inside a
    # library call or between the lines a command prints (a session setting:
    # it cannot be given at connect time). Then a reader's settings are locked.
    with contextlib.suppress(duckdb.Error):  # in Jupyter without ipywidgets DuckDB refuses
        con.execute("SET enable_progress_bar = false")  # even to turn it off: it draws none
    if read_only:
        con.execute("SET lock_configuration = true")
    return con


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _version(con: duckdb.DuckDBPyConnection) -> int:
    # Asked directly: listing the catalog first (duckdb_tables()) cost every
    # read command ~10 ms of CPU on a 200,000-run store.
    try:
        row = con.execute("SELECT max(version) FROM schema_version").fetchall()[0]
    except duckdb.CatalogException:  # a new file: no schema yet
        return 0
    return int(row[0]) if row and row[0] is not None else 0


#: What opening a store had to say (a migration's consequences), by the store's path;
#: :class:`~tracekit.store.Store` takes its own when it opens.
NOTICES: dict[str, list[str]] = {}


def take_notices(path: Path) -> list[str]:
    """The notices opening the store at ``path`` gave, each handed over once."""
    return NOTICES.pop(str(path.resolve()), [])


def _note_unspanned(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    row = con.execute(
        "SELECT count(DISTINCT span_trace), count(DISTINCT run_id) FROM events"
        " WHERE span_trace IS NOT NULL"
    ).fetchall()[0]
    if not row or not row[0]:
        return
    NOTICES.setdefault(str(path.resolve()), []).append(
        f"{path}: migrated to v9 (spans are stored as received). Its {row[0]} OTLP traces"
        " stored before keep their runs, but their spans were not kept: they cannot be"
        " derived again (tracekit rederive) unless their spans are ingested again"
    )


def _migrate(con: duckdb.DuckDBPyConnection, path: Path, *, read_only: bool) -> None:
    version = _version(con)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: store schema v{version} is newer than this tracekit (v{SCHEMA_VERSION})",
            hint="Upgrade tracekit.",
        )
    if version == SCHEMA_VERSION:
        return
    if read_only:
        raise StoreError(
            f"{path}: store schema v{version} needs migrating",
            hint="Run tracekit ingest on it once (it migrates), then read it.",
        )
    for number in range(version + 1, SCHEMA_VERSION + 1):
        con.execute("BEGIN")
        con.execute(MIGRATIONS[number - 1])
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [number])
        con.execute("COMMIT")
    if 0 < version < 9:
        _note_unspanned(con, path)
    if version:  # a migration may ask for runs to be classified again (v8: failed steps)
        from tracekit.store.classify import classify_store

        classify_store(con)
