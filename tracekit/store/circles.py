"""Reading the ``loops`` table: the circles runs went round, and what each cost.

Classification writes the table (:mod:`tracekit.store.classify`, schema
v10); readers (the fleet report, the dashboards, ``/metrics``) take its rows
from here rather than writing SQL on it: :func:`loops` one row a run and
circle, :func:`loop_circles` one row a circle and how it stopped, summed
over the runs, :func:`loop_rows` the fleet report's ``loops`` table: the same
sums per circle and stop kind for a window's runs (it runs unchanged on a
lake, on DuckDB or Spark).

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     [(row.circle, row.stopped, row.invocations) for row in loops(store)]
    [('billing -> invoices -> billing', 'refused', 3)]
"""

from __future__ import annotations

from typing import Final, NamedTuple

import duckdb

from tracekit._util.sql import StoreOrConnection, connection
from tracekit.store.fetched import Rows, fetch
from tracekit.store.fleet_filter import FleetFilter

__all__ = [
    "LOOP_COLUMNS",
    "CircleCost",
    "LoopRow",
    "loop_circles",
    "loop_rows",
    "loops",
    "loops_query",
]

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


# The order the stop kinds are listed in, each circle's: the silent cost burners
# beside the refused ones.
_STOPPED_ORDER: Final = (
    "CASE stopped WHEN 'limit' THEN 0 WHEN 'silent' THEN 1 WHEN 'refused' THEN 2"
    " WHEN 'finished' THEN 3 ELSE 4 END"
)


def loop_rows(con: duckdb.DuckDBPyConnection, flt: FleetFilter) -> Rows:
    """The cost of every circle's loops in the window, by how they stopped; costliest circle first.

    A row is a circle and a stop kind (``limit`` raised, ``silent``, ``refused``,
    ``finished``): its runs, revisits, invocations, model calls, tokens and time
    inside the circle, summed, and per run (``*_per_run``: the sum over the runs;
    a run that reported no usage counts as none). Circles are ordered by the
    tokens of all their loops, then by runs; each circle's stop kinds in the
    order above. The runs are the window's (by the run's start, its service, its
    agent), as every run-level table's.
    """
    where, params = flt.runs_where("r")
    return fetch(
        con,
        f"""
        SELECT circle, stopped, runs, revisits, invocations, model_calls,
            input_tokens, output_tokens, duration_ms,
            tokens / CAST(runs AS DOUBLE) AS tokens_per_run,
            model_calls / CAST(runs AS DOUBLE) AS model_calls_per_run,
            duration_ms / CAST(runs AS DOUBLE) AS ms_per_run, limit_codes
        FROM (
            SELECT *, sum(coalesce(tokens, 0)) OVER (PARTITION BY circle) AS circle_tokens,
                sum(runs) OVER (PARTITION BY circle) AS circle_runs
            FROM (
                SELECT l.circle, l.stopped, count(DISTINCT l.run_id) AS runs,
                    sum(l.revisits) AS revisits, sum(l.invocations) AS invocations,
                    sum(l.model_calls) AS model_calls, sum(l.input_tokens) AS input_tokens,
                    sum(l.output_tokens) AS output_tokens, sum(l.duration_ms) AS duration_ms,
                    CASE WHEN count(l.input_tokens) + count(l.output_tokens) > 0 THEN
                        coalesce(sum(l.input_tokens), 0) + coalesce(sum(l.output_tokens), 0)
                    END AS tokens,
                    -- NULLIF: with no code, Spark's translation gives '' where DuckDB gives NULL
                    nullif(string_agg(DISTINCT l.limit_code, ', ' ORDER BY l.limit_code), '')
                        AS limit_codes
                FROM loops l JOIN runs r ON r.run_id = l.run_id
                WHERE {where} GROUP BY l.circle, l.stopped
            )
        )
        ORDER BY circle_tokens DESC, circle_runs DESC, circle, {_STOPPED_ORDER}
        """,
        params,
    )
