"""The delegation graph: agents as boxes, caller -> callee edges, recursion circles highlighted.

Graphviz's ``dot`` places the agents and routes the edges
(:mod:`tracekit.dashboards.graph_layout`): callers before callees, each name
inside its agent's box, the groups of agents packed to the page's width.
An agent's box is coloured by the share of its own calls (as a callee, and
as the entry agent of runs) where a failure began;
edges that belong to a recursion circle are drawn thick in the recursion
colour. Names are HTML-escaped (plotly renders a subset of HTML in text).

Example:
    >>> import pandas as pd
    >>> edges = pd.DataFrame({"caller": ["a", "b"], "callee": ["b", "a"], "calls": [5, 1], "failed": [0, 1]})
    >>> fig = delegation_graph(edges, circles=["a -> b -> a"])
    >>> sorted(circle_edges(["a -> b -> a"]))
    [('a', 'b'), ('b', 'a')]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Any, Final

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from tracekit._util.theme import NEUTRAL, RECURSION_COLOR
from tracekit.dashboards.fleet_figures import FEW_CALLS, label
from tracekit.dashboards.graph_layout import Layout, layout

__all__ = ["GRAPH_WIDTH", "circle_edges", "delegation_graph"]

_EDGE: Final = "#8c959f"
#: The plot area's width (px): what a page's section holds at 1280 px and wider.
GRAPH_WIDTH: Final = 1060.0
_MARGIN: Final = {"l": 10, "r": 90, "t": 50, "b": 10}  # r: the colour bar
_AIR: Final = 8.0  # around the drawing, so a thick border is not cut
_SCALE: Final = [[0, "#dafbe1"], [0.15, "#fff8c5"], [1, "#cf222e"]]


def circle_edges(circles: Iterable[str]) -> set[tuple[str, str]]:
    """The caller -> callee pairs of circles written ``a -> b -> a``."""
    pairs: set[tuple[str, str]] = set()
    for circle in circles:
        names = [n.strip() for n in str(circle).split(" -> ")]
        pairs.update(itertools.pairwise(names))
    return pairs


def _edge_traces(
    edges: pd.DataFrame, placed: Layout, hot: set[tuple[str, str]]
) -> list[go.Scatter]:
    """Edges grouped by line width (few traces), then one trace of arrowheads per colour."""
    top = max(int(edges["calls"].max()), 1) if not edges.empty else 1
    lines: dict[tuple[bool, int], tuple[list[float | None], list[float | None], list[str]]] = {}
    heads: dict[bool, tuple[list[float], list[float], list[float]]] = {}
    for row in edges.itertuples(index=False):
        in_circle = (row.caller, row.callee) in hot
        points = placed.edges[(str(row.caller), str(row.callee))]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        weight = 4 if in_circle else 1 + round(3 * math.sqrt(int(row.calls) / top))
        rate = int(row.failed) / max(int(row.calls), 1)
        tip = (
            f"{label(row.caller)} → {label(row.callee)}<br>"
            f"{int(row.calls):,} calls, {rate:.1%} failed"
            + ("<br><b>in a recursion circle</b>" if in_circle else "")
        )
        lx, ly, lt = lines.setdefault((in_circle, weight), ([], [], []))
        lx.extend([*xs[:-1], None])  # the line stops where its arrowhead starts
        ly.extend([*ys[:-1], None])
        lt.extend([tip] * (len(xs) - 1) + [""])
        hx, hy, ha = heads.setdefault(in_circle, ([], [], []))
        hx.append((xs[-1] + xs[-2]) / 2)
        hy.append((ys[-1] + ys[-2]) / 2)
        ha.append(math.degrees(math.atan2(xs[-1] - xs[-2], ys[-1] - ys[-2])))
    traces = [
        go.Scatter(
            x=lx,
            y=ly,
            text=lt,
            mode="lines",
            hoverinfo="text",
            showlegend=False,
            line={"color": RECURSION_COLOR if hot_ else _EDGE, "width": weight},
            opacity=1.0 if hot_ else 0.6,
            uid=f"tk-edges-{int(hot_)}-{weight}",
        )
        for (hot_, weight), (lx, ly, lt) in sorted(lines.items())
    ]
    traces += [
        go.Scatter(
            x=hx,
            y=hy,
            mode="markers",
            hoverinfo="skip",
            showlegend=False,
            marker={
                "symbol": "triangle-up",
                "angle": ha,
                "size": 10 if hot_ else 8,
                "color": RECURSION_COLOR if hot_ else _EDGE,
            },
            uid=f"tk-heads-{int(hot_)}",
        )
        for hot_, (hx, hy, ha) in sorted(heads.items())
    ]
    return traces


def _origin_rates(
    edges: pd.DataFrame, origins: pd.DataFrame | None
) -> tuple[dict[str, int], dict[str, int]]:
    """Calls to each agent and the failures that began in it (without ``origins``: every
    failed call, as the edges count them)."""
    if origins is not None and not origins.empty:
        frame = origins.set_index("agent")
        return frame["calls"].astype(int).to_dict(), frame["origins"].astype(int).to_dict()
    called = edges.groupby("callee")[["calls", "failed"]].sum()
    return called["calls"].astype(int).to_dict(), called["failed"].astype(int).to_dict()


def _rates(
    edges: pd.DataFrame, names: list[str], origins: pd.DataFrame | None
) -> tuple[list[int], list[float]]:
    """Calls to each agent, and the share of them where a failure began."""
    calls_in, began = _origin_rates(edges, origins)
    calls = [calls_in.get(n, 0) for n in names]
    return calls, [began.get(n, 0) / max(c, 1) for n, c in zip(names, calls, strict=True)]


def _few(calls: int) -> str:
    return "<br><i>few calls: a rough rate</i>" if calls < FEW_CALLS else ""


def _node_traces(
    edges: pd.DataFrame, placed: Layout, hot: set[tuple[str, str]], origins: pd.DataFrame | None
) -> tuple[list[go.Scatter], list[dict[str, Any]]]:
    """The agents' boxes (shapes), their names inside, and a trace for hover and the colour bar."""
    in_circle = {n for pair in hot for n in pair}
    names = list(placed.boxes)
    calls, rates = _rates(edges, names, origins)
    top = max(0.2, max(rates, default=0.0))
    fills = sample_colorscale(_SCALE, [min(r / top, 1.0) for r in rates]) if names else []
    shapes = [
        {"type": "rect", "layer": "below", "fillcolor": fill,
         "x0": b.x - b.w / 2, "x1": b.x + b.w / 2, "y0": b.y - b.h / 2, "y1": b.y + b.h / 2,
         "line": {"width": 3 if n in in_circle else 1,
                  "color": RECURSION_COLOR if n in in_circle else NEUTRAL}}
        for n, b, fill in zip(names, placed.boxes.values(), fills, strict=True)
    ]  # fmt: skip
    xs, ys = [b.x for b in placed.boxes.values()], [b.y for b in placed.boxes.values()]
    nodes = go.Scatter(
        x=xs,
        y=ys,
        mode="markers",
        hovertext=[
            f"<b>{label(n)}</b><br>{round(r * c):,} of its {c:,} calls failed there ({r:.1%}:"
            f" began in it, not passed through){_few(c)}"
            for n, c, r in zip(names, calls, rates, strict=True)
        ],
        hoverinfo="text",
        showlegend=False,
        uid="tk-nodes",
        marker={
            "size": 20,
            "opacity": 0,  # the boxes are the shapes; this trace answers hovers
            "color": rates,
            "colorscale": _SCALE,
            "cmin": 0,
            "cmax": top,
            "colorbar": {"title": {"text": "failures<br>begun"}, "tickformat": ".0%",
                         "thickness": 10, "lenmode": "pixels", "len": 160, "x": 1.0,
                         "xanchor": "left", "xpad": 8, "y": 1.0, "yanchor": "top"},
        },
    )  # fmt: skip
    labels = go.Scatter(
        x=xs,
        y=ys,
        mode="text",
        text=[label(n) for n in names],
        textposition="middle center",
        textfont={"size": 12, "color": "#1f2328"},
        hoverinfo="skip",
        showlegend=False,
        uid="tk-labels",
    )
    return [nodes, labels], shapes


def _drop_never_ran(edges: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Leave out agents that never ran (every call to them refused, and they call no one):
    bad names and unregistered agents, listed in the failure tables instead."""
    if edges.empty:
        return edges, 0
    called = edges.groupby("callee")[["calls", "failed"]].sum()
    refused_only = set(called.index[called["calls"] == called["failed"]]) - set(edges["caller"])
    if "refused" in edges.columns:
        by_refusal = edges.groupby("callee")[["calls", "refused"]].sum()
        refused_only = set(by_refusal.index[by_refusal["calls"] == by_refusal["refused"]]) - set(
            edges["caller"]
        )
    kept = edges[~edges["callee"].isin(refused_only)]
    return kept, len(refused_only)


def delegation_graph(
    edges: pd.DataFrame,
    circles: Iterable[str] = (),
    *,
    origins: pd.DataFrame | None = None,
    title: str = "Delegation graph",
    width: float = GRAPH_WIDTH,
) -> go.Figure:
    """Draw caller -> callee edges; the edges of the given circles stand out.

    An agent's colour is the share of its own calls where a failure began
    (``origins``): a caller that only wrapped its callee's failure is not
    blamed for it.

    Args:
        edges: ``caller``, ``callee``, ``calls``, ``failed`` (:func:`tracekit.fleet.delegation_edges`).
        circles: canonical circles (``"a -> b -> a"``) whose edges to highlight.
        origins: ``agent``, ``calls``, ``origins`` (failures that began there), as
            :func:`tracekit.store.page_reads.origin_failures`; without it, every failed call.
        title: the figure's title.
        width: the plot area's width in pixels: groups of agents are packed to it.

    Raises:
        TracekitError: Graphviz's ``dot`` is not installed.
    """
    hot = circle_edges(circles)
    edges, hidden = _drop_never_ran(edges)
    if hidden:
        title += f" · {hidden} name{'s' * (hidden != 1)} only ever refused not drawn"
    placed = layout(_pairs(edges), width=width - 2 * _AIR)
    nodes, shapes = _node_traces(edges, placed, hot, origins)
    fig = go.Figure([*_edge_traces(edges, placed, hot), *nodes] if placed.boxes else [])
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        template="plotly_white",
        autosize=False,
        width=int(width) + _MARGIN["l"] + _MARGIN["r"],
        height=int(placed.height + 2 * _AIR) + _MARGIN["t"] + _MARGIN["b"],
        margin=_MARGIN,
        hovermode="closest",
        shapes=shapes,
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"},
    )
    # one pixel a unit on both axes: the boxes were sized in pixels for their names
    fig.update_xaxes(visible=False, range=[-_AIR, width - _AIR], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-_AIR, placed.height + _AIR], fixedrange=True)
    return fig


def _pairs(edges: pd.DataFrame) -> list[tuple[str, str]]:
    return [(str(a), str(b)) for a, b in edges[["caller", "callee"]].itertuples(index=False)]
