"""Where the delegation graph's agents and edges go: Graphviz ``dot`` lays it out.

Each group of agents that call each other (a service, usually) is laid out
by ``dot`` as a layered graph, callers before callees, with its edges routed
around the agents as splines. Each agent is a box sized to hold its name, so
a name sits inside its own box and no box, name or edge lands on another.
The groups are then packed in rows no wider than the page, each row's spare
width spread evenly around its groups: a group laid out left to right that is
too wide is laid out top to bottom instead.

Everything is in pixels (one Graphviz point is one pixel), y growing upwards
as in a plot. ``dot`` runs through the ``graphviz`` package (Graphviz itself
is a system package: ``apt-get install graphviz``, ``brew install graphviz``).

Example:
    >>> placed = layout([("desk", "billing"), ("billing", "desk")], width=600)
    >>> sorted(placed.boxes), placed.width <= 600
    (['billing', 'desk'], True)
    >>> len(placed.edges[("desk", "billing")]) > 2
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from tracekit._util.text import escape
from tracekit.errors import TracekitError

__all__ = ["Box", "Layout", "label_width", "layout"]

CHAR_PX: Final = 7.4  # a 12 px sans-serif character, rounded up (DejaVu Sans is wide)
BOX_H: Final = 26.0
_PAD_X: Final = 16.0
_GAP: Final = 28.0  # between two packed groups
_SAMPLES: Final = 8  # points along each Bezier piece of an edge
_ARROW: Final = 10.0  # dot leaves this much (points) between an edge's end and its box


@dataclass(frozen=True, slots=True)
class Box:
    """An agent's box: its centre and its size (pixels)."""

    x: float
    y: float
    w: float
    h: float


@dataclass(slots=True)
class Layout:
    """The placed graph: boxes by agent, each edge as a polyline ending at its arrow's tip."""

    boxes: dict[str, Box] = field(default_factory=dict)
    edges: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


@dataclass(slots=True)
class _Group:
    names: list[str]
    boxes: dict[str, Box]
    edges: dict[tuple[str, str], list[tuple[float, float]]]
    width: float
    height: float


def label_width(name: str) -> float:
    """The width (pixels) of a box that holds ``name`` as the page shows it."""
    return CHAR_PX * len(escape(str(name))) + _PAD_X


def _groups(pairs: Sequence[tuple[str, str]]) -> list[list[str]]:
    """Agents that call each other, directly or not; the biggest group first."""
    links: dict[str, set[str]] = {}
    for a, b in pairs:
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)
    seen: set[str] = set()
    groups = []
    for start in sorted(links):
        if start in seen:
            continue
        group, stack = [], [start]
        seen.add(start)
        while stack:
            here = stack.pop()
            group.append(here)
            for other in sorted(links[here] - seen):
                seen.add(other)
                stack.append(other)
        groups.append(sorted(group))
    return sorted(groups, key=lambda g: (-len(g), g[0]))


def _dot(names: list[str], pairs: Iterable[tuple[str, str]], rankdir: str) -> str:
    """One group as a dot graph; agents are ``n0``, ``n1``... (names never reach dot)."""
    ids = {n: f"n{i}" for i, n in enumerate(names)}
    nodes = "".join(f"{ids[n]}[width={label_width(n) / 72:.4f}];" for n in names)
    edges = "".join(f"{ids[a]}->{ids[b]};" for a, b in pairs)
    return (
        f"digraph{{rankdir={rankdir};nodesep=0.3;ranksep=0.45;"
        f'node[shape=box,fixedsize=true,height={BOX_H / 72:.4f},label=""];{nodes}{edges}}}\n'
    )


def _run_dot(source: str) -> str:
    import graphviz

    try:
        return graphviz.pipe("dot", "plain", source.encode()).decode()
    except graphviz.ExecutableNotFound:
        raise TracekitError(
            "the delegation graph needs Graphviz's dot, which is not installed",
            hint="install Graphviz: apt-get install graphviz (Debian), brew install graphviz (macOS)",
        ) from None
    except (graphviz.CalledProcessError, OSError) as exc:
        raise TracekitError(f"Graphviz's dot failed: {exc}") from None


def _bezier(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A piecewise cubic Bezier (dot's control points) as a polyline."""
    out = [points[0]]
    for i in range(0, len(points) - 3, 3):
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points[i : i + 4]
        for s in range(1, _SAMPLES + 1):
            t = s / _SAMPLES
            u = 1 - t
            out.append((
                u**3 * x0 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t**3 * x3,
                u**3 * y0 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t**3 * y3,
            ))  # fmt: skip
    return out


def _tip(line: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The line carried on to its arrow's tip, where dot would draw the arrowhead."""
    (ax, ay), (bx, by) = line[-2], line[-1]
    length = max(((bx - ax) ** 2 + (by - ay) ** 2) ** 0.5, 1e-9)
    return [*line, (bx + (bx - ax) / length * _ARROW, by + (by - ay) / length * _ARROW)]


def _parse(text: str, names: list[str]) -> _Group:
    """dot's ``plain`` output of one group, in pixels."""
    by_id = {f"n{i}": n for i, n in enumerate(names)}
    group = _Group(names, {}, {}, 0.0, 0.0)
    for line in text.splitlines():
        parts = line.split()
        if parts[0] == "graph":
            group.width, group.height = float(parts[2]) * 72, float(parts[3]) * 72
        elif parts[0] == "node":
            x, y, w, h = (float(v) * 72 for v in parts[2:6])
            group.boxes[by_id[parts[1]]] = Box(x, y, w, h)
        elif parts[0] == "edge":
            n = int(parts[3])
            values = [float(v) * 72 for v in parts[4 : 4 + 2 * n]]
            points = list(zip(values[::2], values[1::2], strict=True))
            group.edges[(by_id[parts[1]], by_id[parts[2]])] = _tip(_bezier(points))
    return group


def _lay_out(groups: list[list[str]], pairs: list[tuple[str, str]]) -> list[list[_Group]]:
    """Each group laid out both ways (left to right, top to bottom) in one run of dot."""
    members = {n: g for g, names in enumerate(groups) for n in names}
    own: dict[int, list[tuple[str, str]]] = {}
    for a, b in pairs:
        own.setdefault(members[a], []).append((a, b))
    ways = [(names, own.get(g, []), rd) for g, names in enumerate(groups) for rd in ("LR", "TB")]
    text = _run_dot("".join(_dot(names, mine, rd) for names, mine, rd in ways))
    graphs = [chunk for chunk in text.split("stop\n") if chunk.strip()]
    parsed = [_parse(g, names) for g, (names, _, _) in zip(graphs, ways, strict=True)]
    return [parsed[i : i + 2] for i in range(0, len(parsed), 2)]


def _pick(ways: list[_Group], width: float) -> _Group:
    """Left to right when it fits the width (callers before callees, as read), else the narrower."""
    lr, tb = ways
    return lr if lr.width <= width or lr.width <= tb.width else tb


def _shift(group: _Group, dx: float, dy: float, into: Layout) -> None:
    for name, b in group.boxes.items():
        into.boxes[name] = Box(b.x + dx, b.y + dy, b.w, b.h)
    for pair, line in group.edges.items():
        into.edges[pair] = [(x + dx, y + dy) for x, y in line]


def layout(pairs: Iterable[tuple[str, str]], *, width: float) -> Layout:
    """Place the agents and route the edges of caller -> callee ``pairs``.

    Groups of connected agents are packed in rows, biggest first, each into
    the first row with room, no row wider than ``width`` pixels unless one
    group alone is wider. Repeated pairs are drawn once.

    Raises:
        TracekitError: Graphviz's ``dot`` is not installed (the hint says how to).
    """
    pairs = list(dict.fromkeys((str(a), str(b)) for a, b in pairs))
    placed = Layout()
    if not pairs:
        return placed
    groups = [_pick(ways, width) for ways in _lay_out(_groups(pairs), pairs)]
    rows: list[list[_Group]] = []
    for group in groups:  # biggest first, each into the first row with room (first fit)
        room = [r for r in rows if sum(g.width + _GAP for g in r) + group.width <= width]
        if room:
            room[0].append(group)
        else:
            rows.append([group])
    top = 0.0
    for row in rows:
        height = max(g.height for g in row)
        # the row's spare width spread evenly around its groups: the page's width is used
        spare = max(width - sum(g.width for g in row) - _GAP * (len(row) - 1), 0.0)
        air = spare / (len(row) + 1)
        x = air
        for group in row:  # each group centred in its row's height
            _shift(group, x, -top - (height + group.height) / 2, placed)
            x += group.width + _GAP + air
        placed.width = max(placed.width, x - _GAP)
        top += height + _GAP
    placed.height = top - _GAP
    for name, b in placed.boxes.items():  # y up from the bottom row's foot
        placed.boxes[name] = Box(b.x, b.y + placed.height, b.w, b.h)
    for pair, line in placed.edges.items():
        placed.edges[pair] = [(x, y + placed.height) for x, y in line]
    return placed
