"""The delegation graph: agents as nodes, caller -> callee edges, recursion circles highlighted.

Agents are laid out in columns by how far they are from an entry agent (one
that is called less than it calls, or never); each edge is drawn as a gentle
curve bent to its right, so ``a -> b`` and ``b -> a`` stay apart. Edges that
belong to a recursion circle are drawn thick in the recursion colour.
Names are HTML-escaped (plotly renders a subset of HTML in text).

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
from collections import deque
from collections.abc import Iterable
from typing import Final

import pandas as pd
import plotly.graph_objects as go

from tracekit._util.theme import NEUTRAL, RECURSION_COLOR
from tracekit.dashboards.fleet_figures import label

__all__ = ["circle_edges", "delegation_graph", "layout"]

_EDGE: Final = "#8c959f"
_SAMPLES: Final = 16  # points along each curved edge


def circle_edges(circles: Iterable[str]) -> set[tuple[str, str]]:
    """The caller -> callee pairs of circles written ``a -> b -> a``."""
    pairs: set[tuple[str, str]] = set()
    for circle in circles:
        names = [n.strip() for n in str(circle).split(" -> ")]
        pairs.update(itertools.pairwise(names))
    return pairs


def _components(nodes: list[str], links: dict[str, set[str]]) -> list[list[str]]:
    """Agents that call each other, directly or not (each service is usually one)."""
    seen: set[str] = set()
    groups = []
    for node in nodes:
        if node in seen:
            continue
        group, stack = [], [node]
        seen.add(node)
        while stack:
            here = stack.pop()
            group.append(here)
            for other in sorted(links.get(here, ())):
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        groups.append(sorted(group))
    return groups


def _levels(
    group: list[str],
    succ: dict[str, list[str]],
    calls_in: dict[str, int],
    calls_out: dict[str, int],
) -> dict[str, int]:
    """Columns by distance from the group's entry agents (called less than they call)."""
    entries = [n for n in group if calls_in.get(n, 0) < calls_out.get(n, 0) / 2]
    entries = entries or [max(group, key=lambda n: (calls_out.get(n, 0), n))]
    level = dict.fromkeys(entries, 0)
    queue = deque(entries)
    while queue:
        node = queue.popleft()
        for nxt in succ.get(node, ()):
            if nxt not in level:
                level[nxt] = level[node] + 1
                queue.append(nxt)
    return {n: level.get(n, 0) for n in group}


def layout(edges: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Positions of every agent: one block per group of connected agents, side by side,
    each in columns by distance from its entry agents."""
    calls_in: dict[str, int] = {}
    calls_out: dict[str, int] = {}
    succ: dict[str, list[str]] = {}
    links: dict[str, set[str]] = {}
    for caller, callee, calls in edges[["caller", "callee", "calls"]].itertuples(index=False):
        calls_out[caller] = calls_out.get(caller, 0) + int(calls)
        calls_in[callee] = calls_in.get(callee, 0) + int(calls)
        succ.setdefault(caller, []).append(callee)
        links.setdefault(caller, set()).add(callee)
        links.setdefault(callee, set()).add(caller)
    nodes = sorted(set(calls_in) | set(calls_out))
    groups = _components(nodes, links)
    groups.sort(key=lambda g: (-sum(calls_out.get(n, 0) for n in g), g[0]))
    positions: dict[str, tuple[float, float]] = {}
    x0 = 0.0
    for group in groups:
        level = _levels(group, succ, calls_in, calls_out)
        columns: dict[int, list[str]] = {}
        for node in group:
            columns.setdefault(level[node], []).append(node)
        for x, names in columns.items():
            names.sort(key=lambda n: (-(calls_in.get(n, 0) + calls_out.get(n, 0)), n))
            for i, name in enumerate(names):
                positions[name] = (x0 + x, (len(names) - 1) / 2 - i)
        x0 += max(columns) + 1.6
    return positions


def _curve(a: tuple[float, float], b: tuple[float, float]) -> tuple[list[float], list[float]]:
    """A quadratic curve from a to b bent to its right (a self-call is a small loop)."""
    (x0, y0), (x1, y1) = a, b
    if a == b:
        return [x0, x0 + 0.25, x0 + 0.25, x0], [y0, y0 + 0.2, y0 - 0.2, y0]
    dx, dy = x1 - x0, y1 - y0
    length = math.hypot(dx, dy)
    bend = 0.12 * length
    cx, cy = (x0 + x1) / 2 + dy / length * bend, (y0 + y1) / 2 - dx / length * bend
    ts = [i / _SAMPLES for i in range(_SAMPLES + 1)]
    xs = [(1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t**2 * x1 for t in ts]
    ys = [(1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t**2 * y1 for t in ts]
    return xs, ys


def _edge_traces(
    edges: pd.DataFrame, pos: dict[str, tuple[float, float]], hot: set[tuple[str, str]]
) -> list[go.Scatter]:
    """Edges grouped by line width (few traces), then one trace of arrowheads per colour."""
    top = max(int(edges["calls"].max()), 1) if not edges.empty else 1
    lines: dict[tuple[bool, int], tuple[list[float | None], list[float | None], list[str]]] = {}
    heads: dict[bool, tuple[list[float], list[float], list[float]]] = {}
    for row in edges.itertuples(index=False):
        in_circle = (row.caller, row.callee) in hot
        xs, ys = _curve(pos[row.caller], pos[row.callee])
        weight = 4 if in_circle else 1 + round(3 * math.sqrt(int(row.calls) / top))
        rate = int(row.failed) / max(int(row.calls), 1)
        tip = (
            f"{label(row.caller)} → {label(row.callee)}<br>"
            f"{int(row.calls):,} calls, {rate:.1%} failed"
            + ("<br><b>in a recursion circle</b>" if in_circle else "")
        )
        lx, ly, lt = lines.setdefault((in_circle, weight), ([], [], []))
        lx.extend([*xs, None])
        ly.extend([*ys, None])
        lt.extend([tip] * len(xs) + [""])
        hx, hy, ha = heads.setdefault(in_circle, ([], [], []))
        hx.append(xs[-3])
        hy.append(ys[-3])
        ha.append(math.degrees(math.atan2(xs[-1] - xs[-3], ys[-1] - ys[-3])))
    traces = [
        go.Scatter(
            x=lx,
            y=ly,
            text=lt,
            mode="lines",
            hoverinfo="text",
            showlegend=False,
            line={"color": RECURSION_COLOR if hot_ else _EDGE, "width": weight},
            opacity=1.0 if hot_ else 0.5,
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
                "size": 10 if hot_ else 7,
                "color": RECURSION_COLOR if hot_ else _EDGE,
            },
        )
        for hot_, (hx, hy, ha) in sorted(heads.items())
    ]
    return traces


def _node_trace(
    edges: pd.DataFrame, pos: dict[str, tuple[float, float]], hot: set[tuple[str, str]]
) -> go.Scatter:
    called = edges.groupby("callee")[["calls", "failed"]].sum()
    in_circle = {n for pair in hot for n in pair}
    names = list(pos)
    rates = [
        int(called.loc[n, "failed"]) / max(int(called.loc[n, "calls"]), 1)
        if n in called.index
        else 0.0
        for n in names
    ]
    calls = [int(called.loc[n, "calls"]) if n in called.index else 0 for n in names]
    return go.Scatter(
        x=[pos[n][0] for n in names],
        y=[pos[n][1] for n in names],
        mode="markers+text",
        text=[label(n) for n in names],
        textposition="top center",
        textfont={"size": 12},
        hovertext=[
            f"<b>{label(n)}</b><br>{c:,} calls in, {r:.1%} failed"
            for n, c, r in zip(names, calls, rates, strict=True)
        ],
        hoverinfo="text",
        showlegend=False,
        marker={
            "size": 18,
            "color": rates,
            "colorscale": [[0, "#dafbe1"], [0.15, "#fff8c5"], [1, "#cf222e"]],
            "cmin": 0,
            "cmax": max(0.2, max(rates, default=0.0)),
            "line": {
                "width": [3 if n in in_circle else 1 for n in names],
                "color": [RECURSION_COLOR if n in in_circle else NEUTRAL for n in names],
            },
            "colorbar": {
                "title": {"text": "failed"},
                "tickformat": ".0%",
                "thickness": 10,
                "len": 0.6,
            },
        },
    )


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
    edges: pd.DataFrame, circles: Iterable[str] = (), *, title: str = "Delegation graph"
) -> go.Figure:
    """Draw caller -> callee edges; the edges of the given circles stand out.

    Args:
        edges: ``caller``, ``callee``, ``calls``, ``failed`` (:func:`tracekit.fleet.delegation_edges`).
        circles: canonical circles (``"a -> b -> a"``) whose edges to highlight.
        title: the figure's title.
    """
    hot = circle_edges(circles)
    edges, hidden = _drop_never_ran(edges)
    if hidden:
        title += f" · {hidden} names only ever refused not drawn"
    pos = layout(edges)
    fig = go.Figure([*_edge_traces(edges, pos, hot), _node_trace(edges, pos, hot)] if pos else [])
    columns = max((x for x, _ in pos.values()), default=0.0)
    rows = max((abs(y) for _, y in pos.values()), default=1.0)
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        template="plotly_white",
        height=max(420, int(90 * rows) + 160),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        hovermode="closest",
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"},
    )
    fig.update_xaxes(visible=False, range=[-0.5, columns + 0.5])
    fig.update_yaxes(visible=False, range=[-rows - 0.6, rows + 0.6])
    return fig
