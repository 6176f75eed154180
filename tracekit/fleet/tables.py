"""The fleet report's tables, derived from the query rows by small pure functions.

One scan of the runs (:func:`tracekit.store.fleet_runs.run_groups`) gives the
outcome shares of both windows, the incomplete runs and the failures by
origin; one scan of the calls (:func:`tracekit.store.fleet_agents.edge_rows`)
gives the delegation edges and the calls made to each origin agent (the
failure rates' denominators). No pandas here: the CLI prints these rows.

Example:
    >>> groups = Rows(("cur", "outcome", "origin_agent", "origin_code", "runs", "running"),
    ...     ("BOOLEAN", "VARCHAR", "VARCHAR", "VARCHAR", "BIGINT", "BIGINT"),
    ...     [(True, "ok", None, None, 3, 0), (True, "failed:child", "sql", "TIMEOUT", 1, 0)])
    >>> outcomes_table(groups, compare=False).rows[0]
    ('ok', 3, 0.75, None, None, None)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from tracekit.failures.outcomes import OUTCOMES
from tracekit.store import Rows

__all__ = [
    "circles_table",
    "edges_table",
    "failures_table",
    "incomplete_counts",
    "outcome_counts",
    "outcomes_table",
    "window_runs",
]

_FAILED: Final = ("failed:child", "failed:refused")


def _current(groups: Rows, current: bool) -> Iterable[dict[str, Any]]:
    return (g for g in groups.records() if bool(g["cur"]) is current)


def window_runs(groups: Rows, current: bool = True) -> int:
    """Every run of a window, classified or not."""
    return sum(g["runs"] for g in _current(groups, current))


def outcome_counts(groups: Rows, current: bool = True) -> dict[str, int]:
    """Runs of each outcome in a window, every outcome listed (in :data:`OUTCOMES` order)."""
    counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for g in _current(groups, current):
        if g["outcome"] in counts:
            counts[g["outcome"]] += g["runs"]
    return counts


def _shares(counts: dict[str, int]) -> list[float]:
    total = sum(counts.values())
    return [n / total if total else 0.0 for n in counts.values()]


def outcomes_table(groups: Rows, *, compare: bool) -> Rows:
    """Outcome, runs and share; with ``compare``, the previous window's and the change.

    A window with no runs has no shares, and no change is given against it.
    """
    now = outcome_counts(groups, True)
    rows: list[tuple[Any, ...]] = []
    if compare:
        # A share of no runs is no share, and a change against it no change:
        # an empty window on either side leaves those cells empty (None).
        before = outcome_counts(groups, False)
        shares = _shares(now) if sum(now.values()) else [None] * len(now)
        earlier = _shares(before) if sum(before.values()) else [None] * len(before)
        for outcome, share, prev_share in zip(now, shares, earlier, strict=True):
            change = None if share is None or prev_share is None else share - prev_share
            rows.append((outcome, now[outcome], share, before[outcome], prev_share, change))
    else:
        rows = [(o, now[o], s, None, None, None) for o, s in zip(now, _shares(now), strict=True)]
    return Rows(
        ("outcome", "runs", "share", "previous_runs", "previous_share", "change"),
        ("VARCHAR", "BIGINT", "DOUBLE", "BIGINT", "DOUBLE", "DOUBLE"),
        rows,
    )


def incomplete_counts(groups: Rows) -> dict[str, int]:
    """Incomplete runs of the window told apart by age: ``crashed`` or still ``running``."""
    total = running = 0
    for g in _current(groups, True):
        if g["outcome"] == "incomplete":
            total += g["runs"]
            running += g["running"]
    return {"crashed": total - running, "running": running}


def _nulls_last(value: str | None) -> tuple[bool, str]:
    return (value is None, value or "")


def failures_table(groups: Rows, edges: Rows) -> Rows:
    """Failed runs by origin agent and code: share of the window's runs, rate per call made.

    ``edges`` are the window's calls by caller and callee, every agent.
    """
    calls: dict[str, int] = {}
    for callee, n in zip(edges.column("callee"), edges.column("calls"), strict=True):
        calls[callee] = calls.get(callee, 0) + n
    total = window_runs(groups)
    found = [g for g in _current(groups, True) if g["outcome"] in _FAILED]
    found.sort(
        key=lambda g: (-g["runs"], _nulls_last(g["origin_agent"]), _nulls_last(g["origin_code"]))
    )
    rows = []
    for g in found:
        made = calls.get(g["origin_agent"]) if g["origin_agent"] is not None else None
        rate = g["runs"] / max(made if made is not None else g["runs"], 1)
        rows.append(
            (g["outcome"], g["origin_agent"], g["origin_code"], g["runs"], g["runs"] / total, rate)
        )
    return Rows(
        ("outcome", "origin_agent", "origin_code", "runs", "share", "rate"),
        ("VARCHAR", "VARCHAR", "VARCHAR", "BIGINT", "DOUBLE", "DOUBLE"),
        rows,
    )


def edges_table(edges: Rows, agent: str | None = None) -> Rows:
    """The delegation edges (by or to ``agent`` when given), with their failure rate."""
    rows = [
        (*row, row[3] / row[2])
        for row in edges.rows
        if agent is None or row[0] == agent or row[1] == agent
    ]
    return Rows((*edges.columns, "failure_rate"), (*edges.types, "DOUBLE"), rows)


def circles_table(circles: Rows, *, compare: bool) -> Rows:
    """The circles, with ``new`` (not seen in the previous window) when comparing."""
    keep = circles.columns.index("seen_before")
    rows = [(*row[:keep], (not row[keep]) if compare else None) for row in circles.rows]
    return Rows((*circles.columns[:keep], "new"), (*circles.types[:keep], "BOOLEAN"), rows)
