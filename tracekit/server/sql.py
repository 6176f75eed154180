"""One SELECT on a served store, bounded: at most so many rows and bytes, for at most so long.

The query is checked as ``tracekit sql`` checks it (DuckDB's parser: one
SELECT, no file read or written, since external access is off for the whole
database) and runs in a transaction that is rolled back, so nothing it does
stays. A query that runs past its time is interrupted; rows past the row or
byte limit are not fetched. DuckDB's memory limit does not cover one value a
function builds (``repeat('x', 2000000000)`` takes gigabytes at once and
cannot be interrupted), so the functions that build a long string from a
count are replaced, for these queries, by versions that refuse a result over
:data:`MAX_VALUE` bytes, and a query naming the built-in ones by their
catalog (``system.main.repeat``) is refused.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     result = bounded_sql(store, "SELECT run_id FROM runs", limit=3, timeout=5)
    >>> result.table.num_rows, result.truncated, result.stopped
    (3, True, 'rows')
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Final

import duckdb
import pyarrow as pa

from tracekit.errors import StoreError
from tracekit.store.query import check_read_only

__all__ = ["DEFAULT_LIMIT", "DEFAULT_TIMEOUT", "MAX_REPLY", "MAX_VALUE", "SqlResult", "bounded_sql"]

#: Rows a query returns at most, unless the request asks for fewer.
DEFAULT_LIMIT: Final = 10_000
#: Seconds a query may run.
DEFAULT_TIMEOUT: Final = 10.0
#: Bytes of Arrow data a reply holds at most (rows past it are left).
MAX_REPLY: Final = 64 << 20
#: Bytes one string built from a count (repeat, lpad, rpad) may have: DuckDB builds
#: 2,048 rows at once, outside its memory limit, so 2,048 of them stay near 128 MiB.
MAX_VALUE: Final = 64 << 10
_BATCH: Final = 256  # rows a fetch brings at once: a few wide rows stay small
# (name, parameters, the size it builds, the call with the count checked first): the
# count itself raises, so no evaluation order (constant folding) builds the value.
_GUARDED: Final = (
    ("repeat", "s, n", "n * length(s)", "system.main.repeat(s, {n})"),
    ("lpad", "s, n, p", "n", "system.main.lpad(s, {n}, p)"),
    ("rpad", "s, n, p", "n", "system.main.rpad(s, {n}, p)"),
)
_CATALOG: Final = re.compile(r'\b"?system"?\s*\.', re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SqlResult:
    """The rows (an Arrow table) and whether more rows were left unread."""

    table: pa.Table
    truncated: bool
    #: What cut the rows short: ``"rows"`` or ``"bytes"`` (None when nothing was left).
    stopped: str | None = None


def bounded_sql(
    store: Any, query: str, *, limit: int, timeout: float, max_bytes: int = MAX_REPLY
) -> SqlResult:
    """Run one read-only SELECT on ``store``: at most ``limit`` rows and ``max_bytes`` bytes.

    Raises:
        StoreError: not one SELECT, it failed, a value would be over
            :data:`MAX_VALUE`, or it ran past ``timeout`` seconds.
    """
    con: duckdb.DuckDBPyConnection = store.con
    check_read_only(con, query)
    if _CATALOG.search(query):
        raise StoreError(
            "a query may not name the system catalog", hint="Call functions by their plain names."
        )
    timer = threading.Timer(timeout, con.interrupt)
    con.execute("BEGIN")
    try:
        _guard_functions(con)
        timer.start()
        return _fetch(con, query, limit, max_bytes)
    except duckdb.InterruptException:
        raise StoreError(
            f"query stopped after {timeout:g} s", hint="Ask for less, or add a LIMIT."
        ) from None
    except duckdb.Error as exc:
        raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from None
    finally:
        timer.cancel()
        con.execute("ROLLBACK")


def _guard_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Shadow the string builders with versions that refuse a value over MAX_VALUE (rolled back)."""
    for name, params, size, call in _GUARDED:
        checked = (
            f"CASE WHEN {size} > {MAX_VALUE}"
            f" THEN error('{name}() would build a value over {MAX_VALUE} bytes') ELSE n END"
        )
        con.execute(f"CREATE OR REPLACE TEMP MACRO {name}({params}) AS {call.format(n=checked)}")


def _fetch(con: duckdb.DuckDBPyConnection, query: str, limit: int, max_bytes: int) -> SqlResult:
    relation = con.sql(query)
    # A relation streams its batches (DuckDB 2 names it to_arrow_reader; 1.x, fetch_arrow_reader).
    read = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    reader = read(_BATCH)
    batches: list[pa.RecordBatch] = []
    rows = size = 0
    stopped = None
    for batch in reader:
        if rows + batch.num_rows > limit:
            batches.append(batch.slice(0, limit - rows))
            stopped = "rows"
            break
        weight = batch.get_total_buffer_size()
        if size + weight > max_bytes:  # keep the rows that fit, at their average size
            fits = (max_bytes - size) * batch.num_rows // max(weight, 1)
            batches.append(batch.slice(0, fits))
            stopped = "bytes"
            break
        size += weight
        batches.append(batch)
        rows += batch.num_rows
    table = pa.Table.from_batches(batches, schema=reader.schema)
    return SqlResult(table, stopped is not None, stopped)
