"""A DataFrame's columns as plain Python values: what ``tracekit find`` prints, without pandas.

Importing pandas, or pyarrow and numpy, costs a short command most of its
time. :class:`PlainFrame` holds what a DataFrame of the same query's Arrow table
would hold, converted as pandas converts it (an integer column with a null
becomes floats), with each column's kind, so that :mod:`tracekit.cli.tables`
prints it byte for byte as it prints the DataFrame. It is made from an Arrow
table, or from DuckDB's rows and column types (no pyarrow at all). It is
column-major and typed by kind, for printing; a store read's result as it
came, row-major with DuckDB's type names, is :class:`tracekit.store.fetched.Rows`.

Example:
    >>> rows = PlainFrame.from_fetched(["a", "n"], ["VARCHAR", "BIGINT"], [("x", 1), (None, None)])
    >>> rows.kinds, rows.columns
    (['text', 'float'], [['x', None], [1.0, None]])
    >>> import pyarrow as pa
    >>> PlainFrame.from_arrow(pa.table({"a": ["x", None], "n": [1, None]})).columns
    [['x', None], [1.0, None]]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["PlainFrame", "like_duckdb_df"]

# DuckDB's column types by the kind of their values (a list type ends in []).
_DUCKDB_KINDS: Final = {
    "VARCHAR": "text",
    "TIMESTAMP": "time",
    "DOUBLE": "float",
    "FLOAT": "float",
    "BIGINT": "int",
    "INTEGER": "int",
    "SMALLINT": "int",
    "TINYINT": "int",
    "HUGEINT": "int",
    "UBIGINT": "int",
    "UINTEGER": "int",
}


_DF_CONVERTED: Final = frozenset({"FLOAT", "HUGEINT", "UBIGINT", "UINTEGER"})
#: DuckDB's types whose values its ``.df()`` holds as they are fetched: an integer column
#: with a null stays integers (a nullable column). Not here: a list (an array), a FLOAT
#: (a float32), a HUGEINT (a float), an unsigned integer, and every other type.
_DF_KINDS: Final = {
    **{name: kind for name, kind in _DUCKDB_KINDS.items() if name not in _DF_CONVERTED},
    "JSON": "text",
    "BOOLEAN": "other",
}


def like_duckdb_df(types: Sequence[str]) -> bool:
    """Whether columns of these DuckDB types print from :meth:`PlainFrame.from_duckdb` as
    from DuckDB's ``.df()`` of the same query.

    Example:
        >>> like_duckdb_df(["VARCHAR", "BIGINT", "TIMESTAMP"]), like_duckdb_df(["VARCHAR[]"])
        (True, False)
    """
    return all(name in _DF_KINDS for name in types)


class PlainFrame:
    """Named columns of values, each of a kind: text, list, time, float, int or other.

    ``names`` are the columns' names and ``columns`` their values, one list a
    column (as a DataFrame's, not a query's rows).
    """

    def __init__(self, names: list[str], columns: list[list[Any]], kinds: list[str]) -> None:
        self.names, self.columns, self.kinds = names, columns, kinds

    @classmethod
    def from_arrow(cls, table: pa.Table) -> PlainFrame:
        """The table's columns as Python values, and their kinds."""
        columns, kinds = [], []
        for column in table.columns:
            kind = _kind(column.type)
            values = column.to_pylist()
            if kind == "int" and column.null_count:  # as pandas: floats, NaN for null
                kind, values = "float", [None if v is None else float(v) for v in values]
            columns.append(values)
            kinds.append(kind)
        return cls(list(table.column_names), columns, kinds)

    @classmethod
    def from_fetched(
        cls, names: list[str], types: Sequence[str], rows: Sequence[tuple[Any, ...]]
    ) -> PlainFrame:
        """DuckDB's fetched ``rows`` and their columns' ``types`` (``str`` of each type)."""
        columns: list[list[Any]] = [list(c) for c in zip(*rows, strict=True)] if rows else []
        columns = columns or [[] for _ in names]
        kinds = []
        for i, name in enumerate(types):
            kind = "list" if name.endswith("[]") else _DUCKDB_KINDS.get(name, "other")
            if kind == "int" and None in columns[i]:  # as pandas: floats, NaN for null
                kind, columns[i] = "float", [None if v is None else float(v) for v in columns[i]]
            kinds.append(kind)
        return cls(list(names), columns, kinds)

    @classmethod
    def from_duckdb(
        cls, names: list[str], types: Sequence[str], rows: Sequence[tuple[Any, ...]]
    ) -> PlainFrame:
        """DuckDB's fetched ``rows`` as its ``.df()`` holds them (types: :func:`like_duckdb_df`).

        Example:
            >>> PlainFrame.from_duckdb(["n"], ["BIGINT"], [(1,), (None,)]).columns
            [[1, None]]
        """
        columns: list[list[Any]] = [list(c) for c in zip(*rows, strict=True)] if rows else []
        kinds = [_DF_KINDS[name] for name in types]
        return cls(list(names), columns or [[] for _ in names], kinds)

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @property
    def empty(self) -> bool:
        """No rows or no columns (as ``DataFrame.empty``)."""
        return not self.columns or not len(self)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``."""
        return self.columns[self.names.index(name)]

    def head_columns(self, count: int) -> PlainFrame:
        """The first ``count`` columns."""
        return PlainFrame(self.names[:count], self.columns[:count], self.kinds[:count])

    def select(self, names: list[str]) -> PlainFrame:
        """These columns, in this order."""
        at = [self.names.index(name) for name in names]
        return PlainFrame(names, [self.columns[i] for i in at], [self.kinds[i] for i in at])

    def with_column(self, name: str, values: list[Any], kind: str) -> PlainFrame:
        """A copy with column ``name`` replaced (or added at the end)."""
        names, columns, kinds = list(self.names), list(self.columns), list(self.kinds)
        if name in names:
            i = names.index(name)
            columns[i], kinds[i] = values, kind
        else:
            names.append(name)
            columns.append(values)
            kinds.append(kind)
        return PlainFrame(names, columns, kinds)

    def tuples(self) -> Iterator[tuple[Any, ...]]:
        """One tuple a row."""
        return zip(*self.columns, strict=True)


def _kind(arrow_type: Any) -> str:
    import pyarrow.types as t

    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return "text"
    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        return "list"
    if t.is_timestamp(arrow_type):
        return "time"
    if t.is_floating(arrow_type):
        return "float"
    if t.is_integer(arrow_type):
        return "int"
    return "other"
