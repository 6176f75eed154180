"""One SELECT on a served store, bounded: at most so many rows, for at most so long.

The query is checked as ``tracekit sql`` checks it (DuckDB's parser: one
SELECT, no file read or written, since external access is off for the whole
database) and runs in a transaction that is rolled back, so nothing it does
stays. A query that runs past its time is interrupted; rows past the limit
are not fetched.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     result = bounded_sql(store, "SELECT run_id FROM runs", limit=3, timeout=5)
    >>> result.table.num_rows, result.truncated
    (3, True)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Final

import duckdb
import pyarrow as pa

from tracekit.errors import StoreError
from tracekit.store.query import check_read_only

__all__ = ["DEFAULT_LIMIT", "DEFAULT_TIMEOUT", "SqlResult", "bounded_sql"]

#: Rows a query returns at most, unless the request asks for fewer.
DEFAULT_LIMIT: Final = 10_000
#: Seconds a query may run.
DEFAULT_TIMEOUT: Final = 10.0
_BATCH: Final = 2048


@dataclass(frozen=True, slots=True)
class SqlResult:
    """The rows (an Arrow table) and whether more rows were left unread."""

    table: pa.Table
    truncated: bool


def bounded_sql(store: Any, query: str, *, limit: int, timeout: float) -> SqlResult:
    """Run one read-only SELECT on ``store`` and return at most ``limit`` rows.

    Raises:
        StoreError: not one SELECT, it failed, or it ran past ``timeout`` seconds.
    """
    con: duckdb.DuckDBPyConnection = store.con
    check_read_only(con, query)
    timer = threading.Timer(timeout, con.interrupt)
    con.execute("BEGIN")
    try:
        timer.start()
        return _fetch(con, query, limit)
    except duckdb.InterruptException:
        raise StoreError(
            f"query stopped after {timeout:g} s", hint="Ask for less, or add a LIMIT."
        ) from None
    except duckdb.Error as exc:
        raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from None
    finally:
        timer.cancel()
        con.execute("ROLLBACK")


def _fetch(con: duckdb.DuckDBPyConnection, query: str, limit: int) -> SqlResult:
    relation = con.sql(query)
    # A relation streams its batches (DuckDB 2 names it to_arrow_reader; 1.x, fetch_arrow_reader).
    read = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    reader = read(_BATCH)
    batches: list[pa.RecordBatch] = []
    rows = 0
    truncated = False
    for batch in reader:
        if rows + batch.num_rows > limit:
            batches.append(batch.slice(0, limit - rows))
            truncated = True
            break
        batches.append(batch)
        rows += batch.num_rows
    return SqlResult(pa.Table.from_batches(batches, schema=reader.schema), truncated)
