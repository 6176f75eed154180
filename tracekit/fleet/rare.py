"""A run against the usual shape of its root agent's runs: ``tracekit diff RUN --against-fleet``.

An invocation's *path* is the agents from the root's call down to it
(``billing/refunds``). Over every other run of the same root agent in the
store, each path is seen in some share of the runs. This run's paths seen in
fewer than ``rare_below`` of them are *rare*; the paths seen in at least
``usual_from`` of them that this run lacks are *missing*.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     found = against_fleet(store, store.runs(limit=1)["run_id"][0])
    >>> found.runs > 0
    True
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from tracekit._util.text import escape, plural
from tracekit.errors import RunNotFoundError, TracekitError
from tracekit.store import other_runs, path_counts, root_agent

__all__ = ["FleetComparison", "PathShare", "against_fleet", "describe_against_fleet"]

_ENCODER: Final = msgspec.json.Encoder()
_LISTED: Final = 50  # lines of each list the text shows


class PathShare(msgspec.Struct, kw_only=True):
    """A path (agents from the root's call down), and in how many of the other runs it is seen."""

    path: list[str]
    runs: int
    share: float


class FleetComparison(msgspec.Struct, kw_only=True):
    """One run against the other runs of its root agent.

    Attributes:
        runId: the run compared.
        agent: its root agent.
        runs: how many other runs of that agent the store holds.
        rareBelow: a path of this run seen in fewer than this share of them is rare.
        usualFrom: a path seen in at least this share of them is usual.
        rare: this run's rare paths, rarest first.
        missing: the usual paths this run lacks, most usual first.
    """

    runId: str
    agent: str | None
    runs: int
    rareBelow: float
    usualFrom: float
    rare: list[PathShare]
    missing: list[PathShare]

    def to_json(self) -> bytes:
        """The comparison as JSON."""
        return _ENCODER.encode(self)

    def __str__(self) -> str:
        return describe_against_fleet(self)


def against_fleet(
    store: Any, run_id: str, *, rare_below: float = 0.05, usual_from: float = 0.5
) -> FleetComparison:
    """Compare a run's invocation paths with the other runs of its root agent.

    Raises:
        RunNotFoundError: the store has no root run ``run_id``.
        TracekitError: the store has no other run of that agent to compare with.
    """
    row = root_agent(store, run_id)
    if row is None:
        raise RunNotFoundError(
            f"run {escape(run_id)} is not a root run of {escape(str(store.path))}",
            run_id=run_id,
            source=str(store.path),
            hint="tracekit runs --db FILE lists them.",
        )
    agent = row[0]
    others = other_runs(store, agent, run_id)
    if not others:
        raise TracekitError(
            f"no other run of {escape(str(agent))} in {escape(str(store.path))} to compare with",
            hint="Ingest more runs of that agent, or compare two runs: tracekit diff A B.",
        )
    rows = path_counts(store, agent, run_id)
    rare, missing = [], []
    for path, runs, mine in rows:
        share = PathShare(path=list(path), runs=runs, share=runs / others)
        if mine and share.share < rare_below:
            rare.append(share)
        elif not mine and share.share >= usual_from:
            missing.append(share)
    rare.sort(key=lambda p: (p.runs, p.path))
    missing.sort(key=lambda p: (-p.runs, p.path))
    return FleetComparison(
        runId=run_id,
        agent=agent,
        runs=others,
        rareBelow=rare_below,
        usualFrom=usual_from,
        rare=rare,
        missing=missing,
    )


def _lines(title: str, paths: list[PathShare], total: int) -> list[str]:
    lines = [title]
    for found in paths[:_LISTED]:
        where = "/".join(map(escape, found.path))
        lines.append(
            f"  {where}: in {found.runs} of {plural(total, 'run')} ({100 * found.share:.1f}%)"
        )
    if len(paths) > _LISTED:
        lines.append(f"  ... and {len(paths) - _LISTED} more (--json lists them all)")
    return lines


def describe_against_fleet(found: FleetComparison) -> str:
    """The comparison as text: the rare paths, then the usual ones that are missing.

    Example:
        >>> print(describe_against_fleet(FleetComparison(runId="r", agent="a", runs=9,
        ...     rareBelow=0.05, usualFrom=0.5, rare=[], missing=[])))
        run r (a) against 9 other runs of a
        rare here (in fewer than 5% of them): none
        usual (in at least 50% of them) but missing here: none
    """
    agent = escape(found.agent) if found.agent else "agent unknown"
    lines = [f"run {escape(found.runId)} ({agent}) against {found.runs} other runs of {agent}"]
    rare = f"rare here (in fewer than {100 * found.rareBelow:g}% of them):"
    usual = f"usual (in at least {100 * found.usualFrom:g}% of them) but missing here:"
    lines += _lines(rare, found.rare, found.runs) if found.rare else [rare + " none"]
    lines += _lines(usual, found.missing, found.runs) if found.missing else [usual + " none"]
    return "\n".join(lines)
