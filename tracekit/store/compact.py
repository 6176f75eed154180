"""A store file rewritten with only what it holds: the space an ingest cut short left behind.

An ingest commits chunk by chunk, and DuckDB writes them into the file; an
interrupted ingest then deletes them again (nothing of it is kept), but
DuckDB never gives a file's free blocks back to the disk. A copy of the
store's live data is as small as the store was before.

Example:
    >>> from tracekit.store import Store
    >>> compact(Path("fleet.duckdb"))  # once no process holds it
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     len(store.runs()) > 0
    True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import duckdb

__all__ = ["COMPACT_UP_TO", "compact"]

#: Stores up to this size are rewritten after an interrupted ingest (a copy takes
#: about as long as reading them); a bigger one keeps its free blocks for the next ingest.
COMPACT_UP_TO: Final = 1 << 30


def compact(path: Path) -> None:
    """Rewrite the closed store ``path`` with only its live data.

    The store is held (DuckDB's write lock) while its copy is written, and
    the copy replaces it once both are closed: a reader sees the old file
    or the new one.

    Raises:
        duckdb.Error: the copy could not be made (the store is left as it was).
    """
    target = path.with_name(path.name + ".compact")
    target.unlink(missing_ok=True)
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"ATTACH '{_quoted(path)}' AS tk_store")
        con.execute(f"ATTACH '{_quoted(target)}' AS tk_compact")
        con.execute("COPY FROM DATABASE tk_store TO tk_compact")
        con.execute("DETACH tk_compact")
        con.execute("DETACH tk_store")
    except duckdb.Error:
        target.unlink(missing_ok=True)
        raise
    finally:
        con.close()
    os.replace(target, path)


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
