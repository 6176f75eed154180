"""``tracekit find``: a structural query's runs or paths as a table, JSON lines or CSV.

The table and CSV show each path as the query language writes it (a hostile
name quoted, then escaped by :func:`tracekit.cli.tables.render`); CSV cells
that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab,
carriage return first) are prefixed with ``'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tracekit._util.plain_frame import PlainFrame
from tracekit._util.text import escape
from tracekit.store.findparse import quote_name

if TYPE_CHECKING:
    import pandas as pd

    from tracekit.store.find import FindResult

__all__ = ["find_frame", "find_notes", "formula_safe", "print_find"]

_FORMULA: Final = ("=", "+", "-", "@", "\t", "\r")
_PATH_TABLE: Final = ["run_id", "outcome", "path", "statuses", "invocation_ids"]
# to_frame's columns from the run: the name in the path's row, and in the run's
_RUN_ADDED: Final = {
    "service": "service",
    "root_agent": "agent",
    "outcome": "outcome",
    "start_at": "start_at",
}


def print_find(
    query: str, db: str | None, *, runs: bool, fmt: str, limit: int, wait: float
) -> None:
    """``tracekit find``: the paths (or the runs) printed, the counts on stderr."""
    from tracekit.cli.output import emit, print_view
    from tracekit.cli.remote import open_reader

    with open_reader(db, None, wait) as store:
        found = store.find(query, limit=limit)
    emit(find_frame(found, fmt, runs=runs), fmt)
    print_view("", find_notes(found, runs=runs))


def find_frame(found: FindResult, fmt: str, *, runs: bool) -> PlainFrame:
    """What ``tracekit find`` prints: one row a run (``runs``) or a path, for ``fmt``.

    Built from the result's plain rows, without pandas or pyarrow; the rows
    and columns are those of ``found.runs`` or ``found.to_frame()``.
    """
    path_rows, run_rows = found.rows()
    if runs:
        frame = run_rows
    else:
        frame = _with_runs(path_rows, run_rows)
        if fmt != "json":  # lists as the query language writes them
            for name in ("statuses", "invocation_ids", "agents"):
                frame = frame.with_column(name, [_joined(v) for v in frame.column(name)], "text")
        if fmt == "table":
            frame = frame.select(_PATH_TABLE)
    return _formula_safe_rows(frame) if fmt == "csv" else frame


def _with_runs(paths: PlainFrame, runs: PlainFrame) -> PlainFrame:
    """As :meth:`FindResult.to_frame`: each path with its run's columns (a left join)."""
    by_run = {row[0]: row[1:] for row in runs.select(["run_id", *_RUN_ADDED.values()]).tuples()}
    for i, (name, source) in enumerate(_RUN_ADDED.items(), start=0):
        kind = runs.kinds[runs.names.index(source)]
        values = [
            by_run.get(run_id, (None,) * len(_RUN_ADDED))[i] for run_id in paths.column("run_id")
        ]
        paths = paths.with_column(name, values, kind)
    return paths


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


def _formula_safe_rows(rows: PlainFrame) -> PlainFrame:
    """As :func:`formula_safe`, on rows: text cells only."""
    columns = [
        [_cell(v) for v in values] if kind in ("text", "list") else values
        for values, kind in zip(rows.columns, rows.kinds, strict=True)
    ]
    return PlainFrame(rows.names, columns, rows.kinds)


def _cell(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA) else value


def find_notes(found: FindResult, *, runs: bool) -> list[str]:
    """The line on stderr: how many runs and paths matched, and how many are shown."""
    total_runs, total_paths = found.total_runs, found.total_paths
    line = f"{total_runs:,} run{'s' * (total_runs != 1)}, {total_paths:,} path{'s' * (total_paths != 1)}"
    path_rows, run_rows = found.rows()  # (their DataFrames would import pandas)
    shown, total = (len(run_rows), total_runs) if runs else (len(path_rows), total_paths)
    if shown < total:
        line += f" (the first {shown:,} shown; --limit N for more)"
    return [line, *(escape(note) for note in found.notes)]
