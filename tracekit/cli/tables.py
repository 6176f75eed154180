"""DataFrames as text for the terminal: a table, JSON lines or CSV.

Names in traces are data: in tables and CSV, control and bidirectional
characters (ANSI escapes included) are shown escaped by
:func:`tracekit._util.text.escape`, as the tree and the fleet show them, never
sent to the terminal as they are. JSON escapes control characters itself.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from tracekit._util.plain_frame import PlainFrame
from tracekit._util.text import escape

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported by the functions that take a DataFrame: `tracekit find`
# prints :class:`PlainFrame` (from Arrow) without it.

__all__ = ["clean", "fit", "render"]

_GAP = 2  # rich's padding between two columns of a borderless table
_NARROWEST = 10  # a text column is cut (with …) to no less than this, or its header
# Short vocabularies, read whole or not at all: never cut.
_WHOLE = frozenset({"outcome", "status", "kind", "format"})
_PANDAS_MISSING = frozenset({"NAType", "NaTType"})  # pd.NA, pd.NaT, without importing pandas


def clean(value: Any, width: int | None = None) -> str:
    """One cell as safe text: what is not printable escaped, cut to ``width``."""
    if value is None or type(value).__name__ in _PANDAS_MISSING:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, datetime):
        text = value.isoformat(sep=" ", timespec="seconds")
    elif isinstance(value, float):
        text = f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
    else:
        text = str(value)
    text = escape(text)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def render(df: pd.DataFrame | PlainFrame, fmt: str, *, width: int | None = None) -> str:
    """Return ``df`` as ``table`` (aligned text), ``json`` (one object per line) or ``csv``.

    ``df`` may be :class:`~tracekit._util.plain_frame.PlainFrame`: the same text as its DataFrame's.
    """
    if isinstance(df, PlainFrame):
        return _render_rows(df, fmt, width)
    if fmt == "json":
        return "\n".join(json.dumps(_jsonable(row)) for row in df.to_dict(orient="records"))
    if fmt == "csv":
        return _csv(df)
    return _table(df, width)


def fit(df: Any, width: int) -> tuple[Any, list[str]]:
    """The leading columns of ``df`` that fit ``width`` as a table, and the names of the rest.

    Ids, outcomes, numbers and times count whole; other text columns may be cut (with
    …) down to their header or ten characters. The columns are kept in their
    order, so put the ones that matter first.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"run_id": ["r-1"], "agent": ["triage"], "note": ["x" * 80]})
        >>> fit(df, 24)[1]
        ['note']
    """
    rows = isinstance(df, PlainFrame)
    used = -_GAP
    for i, (_natural, least) in enumerate(_row_widths(df) if rows else _widths(df)):
        used += least + _GAP
        if used > width and i:
            hidden = df.names[i:] if rows else df.columns[i:]
            return df.head_columns(i) if rows else df.iloc[:, :i], [str(c) for c in hidden]
    return df, []


def _widths(df: pd.DataFrame) -> list[tuple[int, int]]:
    """Each column's natural width, and the least it may be cut to."""
    import pandas as pd

    widths = []
    for i, column in enumerate(df.columns):
        name = escape(str(column))
        natural = max([len(name), *(len(clean(v) or "-") for v in df.iloc[:, i])])
        text = pd.api.types.is_object_dtype(df.dtypes.iloc[i]) or pd.api.types.is_string_dtype(
            df.dtypes.iloc[i]
        )
        cuttable = text and not name.endswith("_id") and name not in _WHOLE
        widths.append((natural, min(natural, max(len(name), _NARROWEST)) if cuttable else natural))
    return widths


def _cut_to(widths: list[tuple[int, int]], width: int) -> list[int]:
    """Column widths summing (with gaps) to at most ``width``: the widest cut first."""
    sizes = [natural for natural, _ in widths]
    room = width - _GAP * (len(sizes) - 1)
    while sum(sizes) > room:
        i = max(range(len(sizes)), key=lambda j: sizes[j] - widths[j][1])
        if sizes[i] <= widths[i][1]:
            break  # nothing left to cut: wider than the terminal
        sizes[i] -= 1
    return sizes


def _csv(df: pd.DataFrame) -> str:
    """CSV with every text cell and column name escaped, numbers and times as they are."""
    import pandas as pd

    safe = df.rename(columns=lambda name: escape(str(name)))
    for i in range(len(safe.columns)):
        dtype = safe.dtypes.iloc[i]
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            safe.isetitem(i, safe.iloc[:, i].map(_escape_cell))
    return safe.to_csv(index=False).rstrip("\n")


def _escape_cell(value: Any) -> Any:
    return escape(value) if isinstance(value, str) else value


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None or type(value).__name__ == "NaTType" or _nan(value):
            out[key] = None
        elif isinstance(value, datetime):
            out[key] = value.isoformat()
        elif hasattr(value, "tolist"):
            out[key] = value.tolist()
        elif hasattr(value, "item"):
            out[key] = value.item()
        else:
            out[key] = value
    return out


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _table(df: pd.DataFrame, width: int | None) -> str:
    rows = [[clean(v) or "-" for v in row] for row in df.itertuples(index=False)]
    return _print_table(list(df.columns), rows, _cut_to(_widths(df), width or 100_000))


def _print_table(names: list[Any], rows: list[list[str]], sizes: list[int]) -> str:
    """The cells as rich prints them: no borders, columns of ``sizes``, lines stripped."""
    header = [escape(str(column)) for column in names]
    if all(_plain(cell) for cell in header) and all(_plain(c) for row in rows for c in row):
        return _plain_table(header, rows, sizes)
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column, size in zip(header, sizes, strict=True):
        table.add_column(column, no_wrap=True, overflow="ellipsis", width=size)
    for row in rows:
        table.add_row(*row)
    buffer = io.StringIO()
    total = sum(sizes) + _GAP * (len(sizes) - 1)
    console = Console(file=buffer, width=total, no_color=True, highlight=False, markup=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").splitlines())


# rich turns :name: into an emoji even without markup; two digits name none.
_EMOJI_CODE: Final = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")


def _plain(cell: str) -> bool:
    """Would rich print this cell as it is? ASCII (one cell a character) and no emoji code."""
    if not cell.isascii():
        return False
    if ":" not in cell:
        return True
    return all(m[2].isdigit() and len(m[2]) <= 2 for m in _EMOJI_CODE.finditer(cell))


def _plain_table(header: list[str], rows: list[list[str]], sizes: list[int]) -> str:
    """What rich prints for plain cells, without importing it (0.06 s of a short command):
    each cell cut to its column with an ellipsis, padded, two spaces between columns."""
    lines = []
    for cells in (header, *rows):
        fitted = [
            (cell if len(cell) <= size else cell[: size - 1] + "…").ljust(size)
            for cell, size in zip(cells, sizes, strict=True)
        ]
        lines.append((" " * _GAP).join(fitted).rstrip())
    return "\n".join(lines)


# --- PlainFrame: the same text, from plain values --------------------------------


def _render_rows(rows: PlainFrame, fmt: str, width: int | None) -> str:
    if fmt == "json":
        return "\n".join(
            json.dumps(_jsonable(dict(zip(rows.names, row, strict=True)))) for row in rows.tuples()
        )
    if fmt == "csv":
        return _rows_csv(rows)
    cells = [[clean(v) or "-" for v in row] for row in rows.tuples()]
    return _print_table(rows.names, cells, _cut_to(_row_widths(rows), width or 100_000))


def _row_widths(rows: PlainFrame) -> list[tuple[int, int]]:
    """As :func:`_widths`: text and list columns (a DataFrame's object ones) may be cut."""
    widths = []
    for column, values, kind in zip(rows.names, rows.columns, rows.kinds, strict=True):
        name = escape(str(column))
        natural = max([len(name), *(len(clean(v) or "-") for v in values)])
        cuttable = kind in ("text", "list") and not name.endswith("_id") and name not in _WHOLE
        widths.append((natural, min(natural, max(len(name), _NARROWEST)) if cuttable else natural))
    return widths


def _rows_csv(rows: PlainFrame) -> str:
    """As ``DataFrame.to_csv`` prints the same columns (after :func:`_csv`'s escaping)."""
    cells = []
    for values, kind in zip(rows.columns, rows.kinds, strict=True):
        if kind == "time":
            cells.append(_csv_times(values))
        else:
            cells.append([_csv_cell(v) for v in values])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([escape(str(name)) for name in rows.names])
    writer.writerows(zip(*cells, strict=True))
    return buffer.getvalue().rstrip("\n")


def _csv_cell(value: Any) -> str:
    if value is None or _nan(value):
        return ""
    if isinstance(value, str):
        return escape(value)
    return repr(value) if isinstance(value, float) else str(value)


def _csv_times(values: list[datetime | None]) -> list[str]:
    """pandas' column-wide format: a date alone if every time is midnight, else the
    seconds, with milliseconds or microseconds if any value has them."""
    present = [v for v in values if v is not None]
    if present and all(v.tzinfo is None for v in present):
        if all(v == v.replace(hour=0, minute=0, second=0, microsecond=0) for v in present):
            return [v.strftime("%Y-%m-%d") if v is not None else "" for v in values]
        micro = any(v.microsecond % 1000 for v in present)
        milli = micro or any(v.microsecond for v in present)
        spec = "microseconds" if micro else "milliseconds" if milli else "seconds"
        return [v.isoformat(sep=" ", timespec=spec) if v is not None else "" for v in values]
    return [v.isoformat(sep=" ") if v is not None else "" for v in values]
