"""``tracekit find``: a structural query's runs or paths as a table, JSON lines or CSV.

The table and CSV show each path as the query language writes it (a hostile
name quoted, then escaped by :func:`tracekit.cli.tables.render`); CSV cells
that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab,
carriage return first) are prefixed with ``'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tracekit._util.text import escape
from tracekit.store.findparse import quote_name

if TYPE_CHECKING:
    import pandas as pd

    from tracekit.store.find import FindResult

__all__ = ["find_frame", "find_notes", "formula_safe"]

_FORMULA: Final = ("=", "+", "-", "@", "\t", "\r")
_PATH_TABLE: Final = ["run_id", "outcome", "path", "statuses", "invocation_ids"]


def find_frame(found: FindResult, fmt: str, *, runs: bool) -> pd.DataFrame:
    """What ``tracekit find`` prints: one row a run (``runs``) or a path, for ``fmt``."""
    if runs:
        frame = found.runs
    else:
        frame = found.to_frame()
        if fmt != "json":  # lists as the query language writes them
            frame = frame.assign(
                statuses=[_joined(v) for v in frame["statuses"]],
                invocation_ids=[_joined(v) for v in frame["invocation_ids"]],
                agents=[_joined(v) for v in frame["agents"]],
            )
        if fmt == "table":
            frame = frame[_PATH_TABLE]
    return formula_safe(frame) if fmt == "csv" else frame


def _joined(values: Any) -> str:
    return " ".join(quote_name(str(v)) if v is not None else "?" for v in values)


def formula_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells a spreadsheet would run as a formula, prefixed with ``'``.

    Example:
        >>> import pandas as pd
        >>> formula_safe(pd.DataFrame({"a": ["=1+2", "ok"], "n": [-1, 2]}))["a"].tolist()
        ["'=1+2", 'ok']
    """
    import pandas as pd

    safe = frame.copy()
    for i in range(len(safe.columns)):
        dtype = safe.dtypes.iloc[i]
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            safe.isetitem(i, safe.iloc[:, i].map(_cell))
    return safe


def _cell(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA) else value


def find_notes(found: FindResult, *, runs: bool) -> list[str]:
    """The line on stderr: how many runs and paths matched, and how many are shown."""
    total_runs, total_paths = found.total_runs, found.total_paths
    line = f"{total_runs:,} run{'s' * (total_runs != 1)}, {total_paths:,} path{'s' * (total_paths != 1)}"
    shown, total = (len(found.runs), total_runs) if runs else (len(found.paths), total_paths)
    if shown < total:
        line += f" (the first {shown:,} shown; --limit N for more)"
    return [line, *(escape(note) for note in found.notes)]
