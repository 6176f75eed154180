"""DataFrames as text for the terminal: a table, JSON lines or CSV.

Names in traces are data: in tables and CSV, control and bidirectional
characters (ANSI escapes included) are shown escaped by
:func:`tracekit._util.text.escape`, as the tree and the fleet show them, never
sent to the terminal as they are. JSON escapes control characters itself.
"""

from __future__ import annotations

import io
import json
import math
from datetime import datetime
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from tracekit._util.text import escape

__all__ = ["clean", "render"]


def clean(value: Any, width: int | None = None) -> str:
    """One cell as safe text: what is not printable escaped, cut to ``width``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if value is pd.NaT:
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


def render(df: pd.DataFrame, fmt: str, *, width: int | None = None) -> str:
    """Return ``df`` as ``table`` (aligned text), ``json`` (one object per line) or ``csv``."""
    if fmt == "json":
        return "\n".join(json.dumps(_jsonable(row)) for row in df.to_dict(orient="records"))
    if fmt == "csv":
        return _csv(df)
    return _table(df, width)


def _csv(df: pd.DataFrame) -> str:
    """CSV with every text cell and column name escaped, numbers and times as they are."""
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
        if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
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


def _table(df: pd.DataFrame, width: int | None) -> str:
    table = Table(box=None, pad_edge=False, header_style="bold")
    cut = [None if str(c).endswith("_id") else 60 for c in df.columns]
    rows = [
        [clean(v, w) for v, w in zip(row, cut, strict=True)] for row in df.itertuples(index=False)
    ]
    for i, column in enumerate(df.columns):
        name = escape(str(column))
        # Ids are copied into other commands: never cut them short.
        widest = max((len(r[i]) for r in rows), default=0) if name.endswith("_id") else 0
        table.add_column(name, no_wrap=True, overflow="ellipsis", min_width=max(len(name), widest))
    for row in rows:
        table.add_row(*row)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width or 200, no_color=True, highlight=False, markup=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").splitlines())
