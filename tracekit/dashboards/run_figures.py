"""One run as plotly figures: its timeline, and its invocations as an icicle or sunburst.

Every builder takes an invocations DataFrame with the columns of
``Store.invocations()`` (``tracekit.notebook.invocations_frame`` builds the
same from a trace file) and returns a ``plotly.graph_objects.Figure``, so
the caller can restyle it. Colours follow the status, as in the HTML tree.

Example:
    >>> import pandas as pd
    >>> frame = pd.DataFrame([
    ...     dict(invocation_id="i1", parent_invocation_id=None, agent="sql", node="delegate",
    ...          kind="delegate", status="ok", start_ms=0.0, end_ms=11.0, duration_ms=11.0,
    ...          depth=1, error_code=None),
    ... ])
    >>> len(timeline_figure(frame).data[0].x)
    1
"""

from __future__ import annotations

import html
import math
from collections.abc import Hashable
from typing import Any, Final

import pandas as pd
import plotly.graph_objects as go

from tracekit._util.theme import NEUTRAL, RECURSION_COLOR, STATUS_COLORS

__all__ = ["icicle_figure", "sunburst_figure", "timeline_figure", "timeline_spec", "tree_order"]

_ROOT_ID: Final = "__run__"
_RECURSION: Final = "recursion"  # the legend entry of a circle's refused invocation
_ROW_HEIGHT: Final = 28
_INDENT_PX: Final = 14
_MAX_MARGIN_PX: Final = 320
_SLIVER: Final = 0.006
_MAX_ANNOTATED: Final = 300  # past this many rows, plain tick labels keep the figure light
_HOVER: Final = (
    "<b>%{customdata[0]}</b><br>node: %{customdata[1]}<br>kind: %{customdata[2]}"
    "<br>status: %{customdata[3]}<br>start: %{base:.1f} ms<br>duration: %{customdata[4]}"
    "<br>error: %{customdata[5]}<extra></extra>"
)


def tree_order(invocations: pd.DataFrame) -> pd.DataFrame:
    """Return the invocations in tree order: each caller followed by its callees.

    Callees are ordered by start time; an invocation whose caller is not in
    the frame starts a branch of its own. Adds a ``row`` column (0, 1, ...).

    Example:
        >>> frame = pd.DataFrame({"invocation_id": ["b", "a"], "parent_invocation_id": ["a", None],
        ...                       "start_ms": [2.0, 1.0]})
        >>> list(tree_order(frame)["invocation_id"])
        ['a', 'b']
    """
    frame = invocations.reset_index(drop=True)
    ids = set(frame["invocation_id"])
    children: dict[Hashable, list[int]] = {}
    starts = frame["start_ms"].fillna(math.inf)
    for pos in starts.sort_values(kind="stable").index:
        parent = frame.at[pos, "parent_invocation_id"]
        key = parent if isinstance(parent, str) and parent in ids else _ROOT_ID
        children.setdefault(key, []).append(int(pos))
    order: list[int] = []
    stack = [iter(children.get(_ROOT_ID, []))]
    while stack:  # iterative: a delegation chain may be very deep
        pos = next(stack[-1], None)
        if pos is None:
            stack.pop()
            continue
        order.append(pos)
        stack.append(iter(children.get(frame.at[pos, "invocation_id"], [])))
    ordered = frame.iloc[order].reset_index(drop=True)
    ordered["row"] = range(len(ordered))
    return ordered


def timeline_figure(invocations: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """A Gantt-style timeline: one bar for each invocation, one row each.

    Rows are in tree order and labels are indented by depth, so a caller sits
    above its callees; the x axis is milliseconds since the first start, so
    background subagents that ran at once show as overlapping bars. Bars are
    coloured by status (one legend entry each), a recursion refusal in the
    recursion colour as in the icicle; an invocation still running
    is drawn to the last time seen. Hover shows node, kind, duration, error.

    Example:
        >>> frame = pd.DataFrame([dict(invocation_id="i", parent_invocation_id=None,
        ...     agent="a", node=None, kind="delegate", status="running", start_ms=5.0,
        ...     end_ms=None, duration_ms=None, depth=1, error_code=None)])
        >>> timeline_figure(frame).data[0].name
        'running'
    """
    fig = go.Figure(timeline_spec(invocations, title=title))
    fig.update_layout(template="plotly_white")
    return fig


def timeline_spec(invocations: pd.DataFrame, *, title: str | None = None) -> dict[str, Any]:
    """The timeline of :func:`timeline_figure` as plotly's JSON (``data`` and ``layout``).

    Plain lists and dicts, ready for ``Plotly.newPlot`` in a page: building
    them skips plotly's validation of every bar and label, which is most of
    the cost of a figure object, so a page can carry many runs' timelines.

    Example:
        >>> frame = pd.DataFrame([dict(invocation_id="i", parent_invocation_id=None,
        ...     agent="a", node=None, kind="delegate", status="ok", start_ms=5.0,
        ...     end_ms=7.0, duration_ms=2.0, depth=1, error_code=None)])
        >>> spec = timeline_spec(frame)
        >>> spec["data"][0]["name"], spec["data"][0]["x"]
        ('ok', [2.0])
    """
    rows = _timeline_rows(invocations)
    data = [
        {
            "type": "bar",
            "name": str(shade),
            "orientation": "h",
            "y": group["row"].tolist(),
            "base": group["offset"].astype(float).tolist(),
            "x": group["width"].astype(float).tolist(),
            "marker": {"color": _shade_color(str(shade)), "line": {"width": 0}},
            "customdata": group[["agent", "node", "kind", "status", "shown", "error"]]
            .astype(object)
            .where(group[["agent", "node", "kind", "status", "shown", "error"]].notna(), None)
            .to_numpy()
            .tolist(),
            "hovertemplate": _HOVER,
        }
        for shade, group in rows.groupby("shade", sort=False)
    ]
    layout: dict[str, Any] = {
        "title": {"text": title} if title else None,
        "barmode": "overlay",
        "bargap": 0.25,
        "height": max(300, 140 + _ROW_HEIGHT * len(rows)),
        "legend": {"title": {"text": "status"}},
        "plot_bgcolor": "#fff",
        "yaxis": {"tickmode": "array", "tickvals": rows["row"].tolist(),
                  "ticktext": rows["label"].tolist(), "autorange": "reversed"},
        "xaxis": {"title": {"text": "ms since the run's first invocation"}, "zeroline": True,
                  "gridcolor": "#eaeef2"},
    }  # fmt: skip
    if len(rows) <= _MAX_ANNOTATED:
        _indent_labels(layout, rows)
    return {"data": data, "layout": layout}


def _indent_labels(layout: dict[str, Any], rows: pd.DataFrame) -> None:
    """Write the row labels left-aligned in the margin, indented by depth.

    Tick labels are right-aligned against the axis, which hides indentation;
    annotations placed in the margin (pixel offsets) show the nesting.
    """
    depth = rows["depth"].fillna(1).astype(int).clip(lower=1) - 1
    needed = depth * _INDENT_PX + rows["agent"].astype(str).str.len() * 7
    margin = int(min(_MAX_MARGIN_PX, 24 + needed.max()))
    layout["annotations"] = [
        {"xref": "paper", "yref": "y", "x": 0, "y": int(row), "xanchor": "left",
         "xshift": -margin + 6 + int(level) * _INDENT_PX,
         "text": ("\u2514 " if level else "") + str(agent), "showarrow": False, "align": "left"}
        for row, level, agent in zip(rows["row"], depth, rows["agent"], strict=True)
    ]  # fmt: skip
    layout["yaxis"]["showticklabels"] = False
    layout["margin"] = {"l": margin}


def _timeline_rows(invocations: pd.DataFrame) -> pd.DataFrame:
    rows = tree_order(invocations)
    origin = rows["start_ms"].min()
    last = pd.concat([rows["end_ms"], rows["start_ms"]]).max()
    origin = 0.0 if pd.isna(origin) else float(origin)
    last = origin if pd.isna(last) else float(last)
    start = rows["start_ms"].fillna(origin)
    end = rows["end_ms"].where(rows["end_ms"].notna(), last)
    rows["offset"] = start - origin
    rows["shade"] = [_shade(s, c) for s, c in zip(rows["status"], rows["error_code"], strict=True)]
    # An instant invocation (a refusal) gets a sliver of the axis, so that it shows.
    sliver = max(last - origin, 1.0) * _SLIVER
    rows["width"] = (end - start).clip(lower=sliver)
    rows["label"] = [_label(r) for r in rows.itertuples()]
    rows["shown"] = [_duration_text(v) for v in rows["duration_ms"]]
    # Plotly reads tags in hover text: names from traces are escaped to show as written.
    for name, column in (("agent", "agent"), ("node", "node"), ("error", "error_code")):
        rows[name] = [html.escape(str(v)) if isinstance(v, str) else "" for v in rows[column]]
    return rows


def _label(row: Any) -> str:
    depth = int(row.depth) if pd.notna(row.depth) else 1
    indent = "\u2002\u2002" * max(depth - 1, 0)
    return f"{indent}{html.escape(str(row.agent))}"


def _duration_text(value: Any) -> str:
    return "-" if pd.isna(value) else f"{float(value):.1f} ms"


def _status_color(status: str) -> str:
    return STATUS_COLORS.get(status, NEUTRAL)


def _shade(status: Any, code: Any) -> str:
    """The colour class of an invocation: its status, or ``recursion`` for a circle's refusal
    (the timeline and the icicle both give a circle its own colour, as the tree does)."""
    return _RECURSION if code == "AGENT_RECURSION" else str(status)


def _shade_color(shade: str) -> str:
    return RECURSION_COLOR if shade == _RECURSION else _status_color(shade)


def icicle_figure(
    invocations: pd.DataFrame, *, title: str | None = None, root_label: str = "run"
) -> go.Figure:
    """The run as an icicle: each invocation a block under its caller.

    A block's size counts the invocations below it (durations do not nest:
    background subagents may outlive their caller). Colours follow the
    status; a recursion refusal has its own colour.

    Example:
        >>> frame = pd.DataFrame([dict(invocation_id="i", parent_invocation_id=None,
        ...     agent="a", node=None, kind="delegate", status="ok", start_ms=0.0,
        ...     end_ms=1.0, duration_ms=1.0, depth=1, error_code=None)])
        >>> list(icicle_figure(frame).data[0].ids)
        ['__run__', 'i']
    """
    return _hierarchy(go.Icicle, invocations, title, root_label)


def sunburst_figure(
    invocations: pd.DataFrame, *, title: str | None = None, root_label: str = "run"
) -> go.Figure:
    """The run as a sunburst; the same data and colours as :func:`icicle_figure`."""
    return _hierarchy(go.Sunburst, invocations, title, root_label)


def _hierarchy(kind: Any, invocations: pd.DataFrame, title: str | None, root: str) -> go.Figure:
    rows = tree_order(invocations)
    ids = set(rows["invocation_id"])
    parents = [
        p if isinstance(p, str) and p in ids else _ROOT_ID for p in rows["parent_invocation_id"]
    ]
    colors = [
        _shade_color(_shade(status, code))
        for status, code in zip(rows["status"], rows["error_code"], strict=True)
    ]
    hover = [
        f"{status}, {_duration_text(ms)}"
        + (f", {html.escape(code)}" if isinstance(code, str) else "")
        for status, ms, code in zip(
            rows["status"], rows["duration_ms"], rows["error_code"], strict=True
        )
    ]
    trace = kind(
        ids=[_ROOT_ID, *rows["invocation_id"]],
        parents=["", *parents],
        labels=[html.escape(root), *(html.escape(str(a)) for a in rows["agent"])],
        values=[0] + [1] * len(rows),
        branchvalues="remainder",
        marker={"colors": ["#d0d7de", *colors]},
        customdata=["", *hover],
        hovertemplate="<b>%{label}</b><br>%{customdata}<extra></extra>",
        texttemplate="<b>%{label}</b><br>%{customdata}",
        leaf={"opacity": 1.0},
    )
    fig = go.Figure(trace)
    fig.update_layout(title=title, margin={"t": 40 if title else 10, "l": 10, "r": 10, "b": 10})
    return fig
