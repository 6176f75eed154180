"""Agent labels on the delegation graph, placed where they cover no node, edge or label.

The graph is drawn at a fixed pixel size, so a label's box can be worked out
in pixels: its text width at the figure's font, around its node. Each label
tries places around its node (above, below, right, left, the corners, then
further out) and takes the first that is clear of every node, arrowhead,
edge and label placed before it. When some label finds no clear place, the
caller makes the figure roomier and tries again.

Example:
    >>> area = Area(x0=-0.5, x1=1.5, y0=-1.0, y1=1.0, width=600, height=300)
    >>> spots = place_labels({"a": (0.0, 0.0), "b": (1.0, 0.0)}, [], [], area)
    >>> sorted(spots)
    ['a', 'b']
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from tracekit._util.text import escape

__all__ = ["Area", "place_labels"]

CHAR_PX: Final = 7.6  # a 12 px sans-serif character, rounded up (DejaVu is wide)
LABEL_H: Final = 17.0
NODE_R: Final = 12.0  # marker radius with its ring, and a little air
_PAD: Final = 3.0  # air around an edge line (lines are up to 4 px wide)
_DIRECTIONS: Final = ((0, -1), (0, 1), (1, 0), (-1, 0), (1, -1), (-1, -1), (1, 1), (-1, 1))


@dataclass(frozen=True, slots=True)
class Area:
    """The plot area: its axis ranges and its size in pixels."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: float
    height: float

    def px(self, x: float, y: float) -> tuple[float, float]:
        """Data to pixels (y grows downwards, as on screen)."""
        return (
            (x - self.x0) / (self.x1 - self.x0) * self.width,
            (self.y1 - y) / (self.y1 - self.y0) * self.height,
        )

    def data(self, px: float, py: float) -> tuple[float, float]:
        """Pixels back to data."""
        return (
            self.x0 + px / self.width * (self.x1 - self.x0),
            self.y1 - py / self.height * (self.y1 - self.y0),
        )


def _dense(points: Sequence[tuple[float, float]], step: float = 2.0) -> list[tuple[float, float]]:
    """A polyline as points no more than ``step`` pixels apart."""
    out: list[tuple[float, float]] = []
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        n = max(1, int(np.hypot(bx - ax, by - ay) / step))
        out += [(ax + (bx - ax) * i / n, ay + (by - ay) * i / n) for i in range(n)]
    return out + list(points[-1:])


def _candidates(cx: float, cy: float, w: float) -> list[tuple[float, float]]:
    """Label centres around a node, nearest first."""
    spots = []
    for reach in (1.0, 1.8, 2.8):
        for dx, dy in _DIRECTIONS:
            ox = dx * (NODE_R + w / 2 + 2) * reach if dx else 0.0
            oy = dy * (NODE_R + LABEL_H / 2 + 1) * reach if dy else 0.0
            spots.append((cx + ox, cy + oy))
    return spots


def _clear(
    box: tuple[float, float, float, float], points: np.ndarray, boxes: list[tuple[float, ...]]
) -> bool:
    left, top, right, bottom = box
    if len(points):
        inside = (
            (points[:, 0] > left - _PAD) & (points[:, 0] < right + _PAD)
            & (points[:, 1] > top - _PAD) & (points[:, 1] < bottom + _PAD)
        )  # fmt: skip
        if inside.any():
            return False
    return not any(left < b[2] and b[0] < right and top < b[3] and b[1] < bottom for b in boxes)


def place_labels(
    pos: Mapping[str, tuple[float, float]],
    edges: Sequence[Sequence[tuple[float, float]]],
    heads: Sequence[tuple[float, float]],
    area: Area,
) -> dict[str, tuple[float, float]] | None:
    """The centre (data) of each agent's label, or None when one finds no clear place.

    Args:
        pos: each agent's node (data).
        edges: each edge as a polyline (data).
        heads: the arrowheads (data).
        area: the plot area they are drawn in.
    """
    lines = [p for line in edges for p in _dense([area.px(x, y) for x, y in line])]
    points = np.array(lines, dtype=float).reshape(-1, 2)
    boxes: list[tuple[float, ...]] = []
    for x, y in [*pos.values(), *heads]:
        cx, cy = area.px(x, y)
        boxes.append((cx - NODE_R, cy - NODE_R, cx + NODE_R, cy + NODE_R))
    spots: dict[str, tuple[float, float]] = {}
    for name, (x, y) in pos.items():
        w = CHAR_PX * len(escape(str(name))) + 6
        for sx, sy in _candidates(*area.px(x, y), w):
            box = (sx - w / 2, sy - LABEL_H / 2, sx + w / 2, sy + LABEL_H / 2)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= area.width and box[3] <= area.height
            if inside and _clear(box, points, boxes):
                boxes.append(box)
                spots[name] = area.data(sx, sy)
                break
        else:
            return None
    return spots
