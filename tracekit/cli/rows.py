"""Columns of plain Python values from an Arrow table: what ``tracekit find`` prints, without pandas.

Importing pandas costs a short command most of its time. :class:`Rows` holds
what a DataFrame of the same Arrow table would hold, converted as pandas
converts it (an integer column with a null becomes floats), with each
column's kind, so that :mod:`tracekit.cli.tables` prints it byte for byte as
it prints the DataFrame.

Example:
    >>> import pyarrow as pa
    >>> rows = Rows.from_arrow(pa.table({"a": ["x", None], "n": [1, None]}))
    >>> rows.kinds, rows.columns
    (['text', 'float'], [['x', None], [1.0, None]])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Rows"]


class Rows:
    """Named columns of values, each of a kind: text, list, time, float, int or other."""

    def __init__(self, names: list[str], columns: list[list[Any]], kinds: list[str]) -> None:
        self.names, self.columns, self.kinds = names, columns, kinds

    @classmethod
    def from_arrow(cls, table: pa.Table) -> Rows:
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

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @property
    def empty(self) -> bool:
        """No rows or no columns (as ``DataFrame.empty``)."""
        return not self.columns or not len(self)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``."""
        return self.columns[self.names.index(name)]

    def head_columns(self, count: int) -> Rows:
        """The first ``count`` columns."""
        return Rows(self.names[:count], self.columns[:count], self.kinds[:count])

    def select(self, names: list[str]) -> Rows:
        """These columns, in this order."""
        at = [self.names.index(name) for name in names]
        return Rows(names, [self.columns[i] for i in at], [self.kinds[i] for i in at])

    def with_column(self, name: str, values: list[Any], kind: str) -> Rows:
        """A copy with column ``name`` replaced (or added at the end)."""
        names, columns, kinds = list(self.names), list(self.columns), list(self.kinds)
        if name in names:
            i = names.index(name)
            columns[i], kinds[i] = values, kind
        else:
            names.append(name)
            columns.append(values)
            kinds.append(kind)
        return Rows(names, columns, kinds)

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
