"""The store's listings as a terminal prints them: runs, rejects, one SELECT, without pandas.

``tracekit runs``, ``rejects`` and ``sql`` print a table, JSON lines or CSV
of a query's rows. Importing pandas (and numpy) cost such a command most of
its time; where every column is of a type whose values DuckDB's ``.df()``
holds as they are fetched (:func:`~tracekit._util.plain_frame.like_duckdb_df`:
text, numbers, times, booleans), the rows come as a
:class:`~tracekit._util.plain_frame.PlainFrame`, which prints the same text.
Any other type (a list, a decimal, a date), or a server's answer, is a
DataFrame as :class:`~tracekit.store.Store` gives it.

Example:
    >>> import duckdb
    >>> listing(duckdb.connect().execute("SELECT 'a' AS agent, 2 AS calls")).columns
    [['a'], [2]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracekit._util.plain_frame import PlainFrame, like_duckdb_df
from tracekit.store.query import check_names, rejects_query, runs_query
from tracekit.store.store import Store

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from tracekit.store.reader import StoreReader

__all__ = ["listing", "rejects_listing", "runs_listing", "sql_listing"]


def listing(cursor: duckdb.DuckDBPyConnection) -> PlainFrame | pd.DataFrame:
    """An executed query's rows: plain when its columns' types allow, else a DataFrame."""
    description = cursor.description or []
    names = [d[0] for d in description]
    types = [str(d[1]) for d in description]
    if like_duckdb_df(types):
        return PlainFrame.from_duckdb(names, types, cursor.fetchall())
    return cursor.df()


def runs_listing(reader: StoreReader, **filters: Any) -> PlainFrame | pd.DataFrame:
    """:meth:`Store.runs <tracekit.store.Store.runs>`'s rows (the same filters), for printing."""
    if not isinstance(reader, Store):
        return reader.runs(**filters)
    check_names(reader.con, service=filters.get("service"), agent=filters.get("agent"))
    sql, params = runs_query(**filters)
    return listing(reader.con.execute(sql, params))


def rejects_listing(reader: StoreReader, limit: int | None = None) -> PlainFrame | pd.DataFrame:
    """:meth:`Store.rejects <tracekit.store.Store.rejects>`'s rows, for printing."""
    if not isinstance(reader, Store):
        return reader.rejects(limit=limit)
    return listing(reader.con.execute(rejects_query(limit)))


def sql_listing(reader: StoreReader, query: str) -> PlainFrame | pd.DataFrame:
    """:meth:`Store.sql <tracekit.store.Store.sql>`'s result (its checks, its rollback), for printing.

    Raises:
        StoreError: the query is not one SELECT, or it failed.
    """
    if not isinstance(reader, Store):
        return reader.sql(query)
    return reader.select(query, None, listing)
