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

from tracekit.fleet.queries import Rows

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["to_frame"]

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
