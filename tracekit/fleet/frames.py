"""Query rows as pandas DataFrames, with the dtypes DuckDB's ``.df()`` gives.

The fleet queries fetch tuples so that ``tracekit fleet`` never imports
pandas (half a second of its run); notebooks and the dashboard get the same
rows as DataFrames from here, typed as ``.df()`` would type them (a test
compares the two): text is ``str`` (``object`` when every value is NULL),
integers keep their width (nullable when a NULL is present), timestamps are
``datetime64[us]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tracekit.store import Rows

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["circles_frame", "outcomes_frame", "to_frame", "without_column"]

_INTEGERS: Final = {
    "TINYINT": "int8",
    "SMALLINT": "int16",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "UTINYINT": "uint8",
    "USMALLINT": "uint16",
    "UINTEGER": "uint32",
    "UBIGINT": "uint64",
}
_FIXED: Final = {
    "DOUBLE": "float64",
    "FLOAT": "float32",
    "TIMESTAMP": "datetime64[us]",
    "DATE": "datetime64[us]",
}


def _dtype(kind: str, values: list[Any]) -> str:
    has_null = any(v is None for v in values)
    if kind in _INTEGERS:
        dtype = _INTEGERS[kind]
        return dtype.capitalize().replace("Uint", "UInt") if has_null else dtype
    if kind in _FIXED:
        return _FIXED[kind]
    if kind == "VARCHAR":
        return "str" if not all(v is None for v in values) else "object"
    if kind == "BOOLEAN":
        return "boolean" if has_null else "bool"
    return "object"


def to_frame(rows: Rows) -> pd.DataFrame:
    """The rows as a DataFrame typed like DuckDB's ``.df()`` of the same query."""
    import pandas as pd

    data = {}
    for at, (name, kind) in enumerate(zip(rows.columns, rows.types, strict=True)):
        values = [row[at] for row in rows.rows]
        data[name] = pd.Series(values, dtype=_dtype(kind, values))
    return pd.DataFrame(data, columns=list(rows.columns))


def without_column(rows: Rows, column: str) -> Rows:
    """The rows less one column."""
    at = rows.columns.index(column)
    return Rows(
        rows.columns[:at] + rows.columns[at + 1 :],
        rows.types[:at] + rows.types[at + 1 :],
        [row[:at] + row[at + 1 :] for row in rows.rows],
    )


def outcomes_frame(rows: Rows, *, compare: bool) -> pd.DataFrame:
    """The outcomes table as a frame; its comparison columns NA without a previous window."""
    import pandas as pd

    data = rows.records()
    frame = pd.DataFrame({"outcome": [r["outcome"] for r in data]})
    frame["runs"] = pd.Series([r["runs"] for r in data], dtype="int64")
    frame["share"] = pd.Series([r["share"] for r in data], dtype="float64")
    for column, dtype in (
        ("previous_runs", "int64"),
        ("previous_share", "float64"),
        ("change", "float64"),
    ):
        if compare:
            frame[column] = pd.Series([r[column] for r in data], dtype=dtype)
        else:
            frame[column] = pd.NA
    return frame


def circles_frame(rows: Rows, *, compare: bool) -> pd.DataFrame:
    """The circles table as a frame; ``new`` NA without a previous window."""
    import pandas as pd

    frame = to_frame(without_column(rows, "new"))
    if compare:
        frame["new"] = pd.Series(rows.column("new"), dtype=bool)
    else:
        frame["new"] = pd.NA
    return frame
