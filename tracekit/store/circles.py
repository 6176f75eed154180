"""Reading the ``loops`` table: the circles runs went round, and what each cost.

Classification writes the table (:mod:`tracekit.store.classify`, schema
v10); readers (the fleet report, the dashboards, ``/metrics``) take its rows
from here rather than writing SQL on it: :func:`loops` one row a run and
circle, :func:`loop_circles` one row a circle and how it stopped, summed
over the runs.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     [(row.circle, row.stopped, row.invocations) for row in loops(store)]
    [('billing -> invoices -> billing', 'refused', 3)]
"""

from __future__ import annotations

from typing import Final, NamedTuple

from tracekit._util.sql import StoreOrConnection, connection

__all__ = ["LOOP_COLUMNS", "CircleCost", "LoopRow", "loop_circles", "loops", "loops_query"]

#: The table's columns, in its order (docs/store.md).
LOOP_COLUMNS: Final = (
    "run_id",
    "circle",
    "revisits",
    "stopped",
    "limit_code",
    "origin_agent",
    "invocations",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "duration_ms",
)


class LoopRow(NamedTuple):
    """One row of ``loops``: a run, a circle its agents went round, how it ended, its cost."""

    run_id: str
    circle: str
    revisits: int
    stopped: str
    limit_code: str | None
    origin_agent: str | None
    invocations: int
    model_calls: int | None
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: float | None


class CircleCost(NamedTuple):
    """A circle and how it stopped, summed over the runs that went round it."""

    circle: str
    stopped: str
    runs: int
    revisits: int
    invocations: int
    model_calls: int | None
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: float | None


def _where(run_id: str | None, stopped: str | None) -> tuple[str, list[str]]:
    clauses, params = [], []
    for column, value in (("run_id", run_id), ("stopped", stopped)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def loops_query(run_id: str | None = None, stopped: str | None = None) -> tuple[str, list[str]]:
    """The SQL of :func:`loops` and its parameters (for a reader that wants a DataFrame)."""
    where, params = _where(run_id, stopped)
    return f"SELECT {', '.join(LOOP_COLUMNS)} FROM loops{where} ORDER BY run_id, circle", params


def loops(
    store: StoreOrConnection, *, run_id: str | None = None, stopped: str | None = None
) -> list[LoopRow]:
    """The rows of ``loops``, of one run or every run, optionally of one way of stopping.

    Args:
        store: a :class:`~tracekit.store.Store` or its connection.
        run_id: only this root run's.
        stopped: only ``limit``, ``silent``, ``refused`` or ``finished`` ones.
    """
    sql, params = loops_query(run_id, stopped)
    return [LoopRow(*row) for row in connection(store).execute(sql, params).fetchall()]


def loop_circles(store: StoreOrConnection, *, stopped: str | None = None) -> list[CircleCost]:
    """Each circle and how it stopped, with its runs and its cost summed; the costliest first."""
    where, params = _where(None, stopped)
    sql = f"""
SELECT circle, stopped, count(*), sum(revisits), sum(invocations), sum(model_calls),
    sum(input_tokens), sum(output_tokens), sum(duration_ms)
FROM loops{where}
GROUP BY circle, stopped
ORDER BY coalesce(sum(input_tokens), 0) + coalesce(sum(output_tokens), 0) DESC,
    count(*) DESC, circle, stopped
"""
    return [CircleCost(*row) for row in connection(store).execute(sql, params).fetchall()]
