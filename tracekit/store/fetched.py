"""A query's rows as tuples, with their column names and types: no DataFrame, no pandas import.

The fleet report's reads return :class:`Rows`; :func:`fetch` runs a query on
anything that answers DuckDB's ``execute``/``description``/``fetchall`` (a
store's connection, or a lake's engine). What ``tracekit find`` prints is
another shape: a DataFrame's columns as plain values
(:class:`tracekit._util.plain_frame.PlainFrame`).

Example:
    >>> import duckdb
    >>> rows = fetch(duckdb.connect(), "SELECT 1 AS n")
    >>> rows.columns, rows.types, rows.records()
    (('n',), ('INTEGER',), [{'n': 1}])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

__all__ = ["Rows", "fetch"]


@dataclass(frozen=True, slots=True)
class Rows:
    """A query result: column names, DuckDB type names, and the rows as tuples."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]

    def __len__(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts, column name to value."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def column(self, name: str) -> list[Any]:
        """One column's values."""
        at = self.columns.index(name)
        return [row[at] for row in self.rows]


def fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Rows:
    """Run a query and keep its rows as tuples (no DataFrame: no pandas import)."""
    cursor = con.execute(sql, params or [])
    description = cursor.description or []
    return Rows(
        columns=tuple(d[0] for d in description),
        types=tuple(str(d[1]) for d in description),
        rows=cursor.fetchall(),
    )
