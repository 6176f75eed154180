"""The store's state in a few numbers, for ``tracekit serve``'s ``/metrics``: three reads.

Runs by service and outcome (with the incomplete ones told apart by age),
runs by recursion circle and outcome, and the cost of the loops by circle and
how they stopped. Label values are names from traces, so each list is bounded:
the ``top`` services and circles keep their names, the rest are summed under
:data:`OTHER`. The numbers are the store's totals (what it holds now), not
counts of events: the caller exposes them as gauges.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     gauges = store_gauges(store.con, top=20)
    >>> gauges.runs[0], sum(n for *_, n in gauges.runs)
    (('data-desk', 'ok', 11), 40)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

import duckdb

from tracekit.failures.outcomes import STALE_AFTER_MS

__all__ = ["OTHER", "UNCLASSIFIED", "LoopCost", "StoreGauges", "store_gauges"]

#: The label every name past the ``top`` ones is summed under.
OTHER: Final = "other"
#: The outcome of a run the classification has not reached yet.
UNCLASSIFIED: Final = "unclassified"


@dataclass(frozen=True, slots=True)
class LoopCost:
    """What the loops of one circle that stopped one way cost, summed over their runs."""

    circle: str
    stopped: str
    runs: int
    revisits: int
    invocations: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    duration_ms: float


@dataclass(frozen=True, slots=True)
class StoreGauges:
    """The store's runs, circles and loop costs (see :func:`store_gauges`).

    Attributes:
        runs: (service, outcome, runs); a run without a service is ``?``.
        incomplete: incomplete runs by ``crashed`` (quiet for 15 minutes) and ``running``.
        circles: (circle, outcome, runs) of the runs with a recursion circle.
        loops: the cost of the loops by circle and how they stopped.
    """

    runs: list[tuple[str, str, int]]
    incomplete: dict[str, int]
    circles: list[tuple[str, str, int]]
    loops: list[LoopCost]


# The names ranked by how much they weigh; past ``top``, one name: OTHER.
_RUNS: Final = f"""
WITH g AS (
    SELECT coalesce(service, '?') AS service, coalesce(outcome, '{UNCLASSIFIED}') AS outcome,
        count(*) AS runs,
        count(*) FILTER (
            WHERE outcome = 'incomplete' AND coalesce(end_ms, start_ms, 0) >= $since
        ) AS running
    FROM runs GROUP BY ALL
), ranked AS (
    SELECT service, row_number() OVER (ORDER BY sum(runs) DESC, service) AS place
    FROM g GROUP BY service
)
SELECT CASE WHEN place <= $top THEN service ELSE '{OTHER}' END AS name, outcome,
    sum(runs)::BIGINT, sum(running)::BIGINT
FROM g JOIN ranked USING (service) GROUP BY ALL ORDER BY name, outcome
"""

_CIRCLES: Final = f"""
WITH c AS (
    SELECT circle, coalesce(outcome, '{UNCLASSIFIED}') AS outcome, count(*) AS runs
    FROM runs WHERE circle IS NOT NULL GROUP BY ALL
), ranked AS (
    SELECT circle, row_number() OVER (ORDER BY sum(runs) DESC, circle) AS place
    FROM c GROUP BY circle
)
SELECT CASE WHEN place <= $top THEN circle ELSE '{OTHER}' END AS name, outcome,
    sum(runs)::BIGINT
FROM c JOIN ranked USING (circle) GROUP BY ALL ORDER BY name, outcome
"""

# Circles ranked by the tokens spent inside them: the costliest keep their names.
_LOOPS: Final = f"""
WITH ranked AS (
    SELECT circle, row_number() OVER (
        ORDER BY sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) DESC,
            count(*) DESC, circle
    ) AS place
    FROM loops GROUP BY circle
)
SELECT CASE WHEN place <= $top THEN circle ELSE '{OTHER}' END AS name, stopped,
    count(DISTINCT run_id), coalesce(sum(revisits), 0)::BIGINT,
    coalesce(sum(invocations), 0)::BIGINT, coalesce(sum(model_calls), 0)::BIGINT,
    coalesce(sum(input_tokens), 0)::BIGINT, coalesce(sum(output_tokens), 0)::BIGINT,
    coalesce(sum(duration_ms), 0)::DOUBLE
FROM loops JOIN ranked USING (circle) GROUP BY ALL ORDER BY name, stopped
"""


def store_gauges(
    con: duckdb.DuckDBPyConnection, *, top: int = 20, now_ms: float | None = None
) -> StoreGauges:
    """The store's runs, circles and loop costs, each list bounded to ``top`` names.

    Args:
        con: a connection or cursor on the store (only read).
        top: services and circles named; the rest are summed under :data:`OTHER`.
        now_ms: the clock (ms since the epoch) that tells a running run from a
            crashed one (default: now).
    """
    now = time.time() * 1000.0 if now_ms is None else now_ms
    runs = con.execute(_RUNS, {"since": now - STALE_AFTER_MS, "top": top}).fetchall()
    incomplete = {"crashed": 0, "running": 0}
    for _, outcome, n, running in runs:
        if outcome == "incomplete":
            incomplete["running"] += int(running)
            incomplete["crashed"] += int(n) - int(running)
    circles = con.execute(_CIRCLES, {"top": top}).fetchall()
    loops = con.execute(_LOOPS, {"top": top}).fetchall()
    return StoreGauges(
        runs=[(str(s), str(o), int(n)) for s, o, n, _ in runs],
        incomplete=incomplete,
        circles=[(str(c), str(o), int(n)) for c, o, n in circles],
        loops=[_loop(row) for row in loops],
    )


def _loop(row: tuple[Any, ...]) -> LoopCost:
    circle, stopped, runs, revisits, invocations, calls, tokens_in, tokens_out, ms = row
    return LoopCost(
        str(circle),
        str(stopped),
        int(runs),
        int(revisits),
        int(invocations),
        int(calls),
        int(tokens_in),
        int(tokens_out),
        float(ms),
    )
