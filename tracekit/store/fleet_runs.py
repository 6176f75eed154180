"""The fleet report's reads of the runs: one ``GROUP BY`` for many tables, plain rows back.

One ``GROUP BY`` of the runs by window, outcome and origin (outcome shares,
incomplete runs, failures by origin); one of the circles (with whether the
previous window saw each); the newest degraded runs; the worst failed runs;
the sessions; the runs over time. Run-level reads count root runs that
started in the window, of the service, whose tree invoked the agent
(:class:`~tracekit.store.fleet_filter.FleetFilter`). They run unchanged on a
lake, on DuckDB or Spark.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     rows = worst_rows(store.con, FleetFilter(), limit=1)
    >>> rows.columns[:2]
    ('run_id', 'outcome')
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import duckdb

from tracekit.store.fetched import Rows, fetch
from tracekit.store.fleet_filter import FleetFilter

__all__ = [
    "bucket_step",
    "circle_rows",
    "degraded_rows",
    "over_time_rows",
    "run_groups",
    "session_counts",
    "worst_rows",
]


def _span(flt: FleetFilter, prev: FleetFilter | None) -> tuple[str, list[Any], str, list[Any]]:
    """Conditions for both windows at once, and the expression telling the current one."""
    both = replace(flt, start=prev.start) if prev else flt
    where, params = both.runs_where()
    if prev is None:
        return where, params, "TRUE", []
    return where, params, "start_at >= ?", [flt.start]


def run_groups(
    con: duckdb.DuckDBPyConnection, flt: FleetFilter, prev: FleetFilter | None, running_since: float
) -> Rows:
    """Runs by window (``cur``), outcome and origin; ``running`` counts the fresh incomplete ones.

    Args:
        flt: the window reported on.
        prev: the window before it, read in the same scan (None: only ``flt``).
        running_since: an incomplete run that moved after this (ms) is still running.
    """
    where, params, cur, cur_params = _span(flt, prev)
    return fetch(
        con,
        f"""
        SELECT {cur} AS cur, outcome, origin_agent, origin_code, count(*) AS runs,
            count(*) FILTER (
                WHERE outcome = 'incomplete' AND coalesce(end_ms, start_ms, 0) >= ?
            ) AS running
        FROM runs WHERE {where} GROUP BY ALL
        """,
        [*cur_params, running_since, *params],
    )


def circle_rows(
    con: duckdb.DuckDBPyConnection, flt: FleetFilter, prev: FleetFilter | None = None
) -> Rows:
    """Every circle seen in the window, most runs first; ``seen_before``: in ``prev`` too."""
    where, params, cur, cur_params = _span(flt, prev)
    now = f"FILTER (WHERE {cur})"
    service = "coalesce(service, '?')"
    return fetch(
        con,
        f"""
        SELECT circle, count(*) {now} AS runs,
            count(*) FILTER (WHERE {cur} AND outcome = 'failed:recursion') AS failed,
            string_agg(DISTINCT {service}, ', ' ORDER BY {service}) {now} AS services,
            min(start_at) {now} AS first_seen, max(start_at) {now} AS last_seen,
            TRUE AS action, count(*) FILTER (WHERE NOT ({cur})) > 0 AS seen_before
        FROM runs WHERE circle IS NOT NULL AND {where}
        GROUP BY circle HAVING count(*) {now} > 0 ORDER BY runs DESC, circle
        """,
        cur_params * 6 + params + cur_params,
    )


def degraded_rows(
    con: duckdb.DuckDBPyConnection, flt: FleetFilter, limit: int | None = 20, offset: int = 0
) -> Rows:
    """The newest runs that ended ok while a delegation or a step inside failed, ``limit`` from ``offset``
    (all of them: ``limit=None``)."""
    where, params = flt.runs_where()
    cap = "" if limit is None else f"LIMIT {int(limit)}"
    cap += f" OFFSET {int(offset)}" if offset else ""
    return fetch(
        con,
        f"""
        SELECT run_id, start_at, service, agent, origin_agent, origin_code, circle,
            failed_invocations, duration_ms
        FROM runs WHERE outcome = 'degraded' AND {where}
        ORDER BY start_ms DESC NULLS LAST, run_id {cap}
        """,
        params,
    )


def worst_rows(con: duckdb.DuckDBPyConnection, flt: FleetFilter, limit: int = 5) -> Rows:
    """The failed runs most worth a look: circles first, then most failed calls, longest."""
    where, params = flt.runs_where()
    return fetch(
        con,
        f"""
        SELECT run_id, outcome, start_at, service, agent, circle, origin_agent, origin_code,
            failed_invocations, duration_ms
        FROM runs WHERE outcome LIKE 'failed:%' AND {where}
        ORDER BY outcome = 'failed:recursion' DESC, failed_invocations DESC,
            duration_ms DESC NULLS LAST, run_id
        LIMIT {int(limit)}
        """,
        params,
    )


def session_counts(con: duckdb.DuckDBPyConnection, flt: FleetFilter) -> dict[str, int]:
    """Sessions with a run in the window, and how many of them have a failed run (``failed:*``)."""
    where, params = flt.runs_where()
    row = con.execute(
        f"""
        SELECT count(*), count(*) FILTER (WHERE failed > 0), coalesce(sum(runs), 0) FROM (
            SELECT session_id, count(*) AS runs,
                count(*) FILTER (WHERE outcome LIKE 'failed:%') AS failed
            FROM runs WHERE session_id IS NOT NULL AND {where} GROUP BY session_id
        )
        """,
        params,
    ).fetchone()
    sessions, failed, runs = row if row else (0, 0, 0)
    return {"sessions": int(sessions), "failed": int(failed), "runs": int(runs)}


def bucket_step(con: duckdb.DuckDBPyConnection, flt: FleetFilter) -> timedelta:
    """A bucket length giving about 60 buckets over the window (or the store's span)."""
    where, params = flt.runs_where()
    row = con.execute(
        f"SELECT min(start_at), max(start_at) FROM runs WHERE {where}", params
    ).fetchone()
    start = flt.start or (row[0] if row else None)
    end = flt.end or (row[1] if row else None)
    span = (end - start) if start is not None and end is not None else timedelta(hours=1)
    for step in (1, 5, 15, 30, 60, 180, 360, 720, 1440, 10080):
        if span / timedelta(minutes=step) <= 60:
            return timedelta(minutes=step)
    return timedelta(days=30)


def over_time_rows(con: duckdb.DuckDBPyConnection, flt: FleetFilter) -> Rows:
    """Runs of each outcome per time bucket (about 60 buckets over the window)."""
    step = bucket_step(con, flt)
    where, params = flt.runs_where()
    return fetch(
        con,
        f"""
        SELECT time_bucket(INTERVAL '{int(step.total_seconds())} seconds', start_at) AS bucket,
            outcome, count(*) AS runs
        FROM runs WHERE start_at IS NOT NULL AND {where}
        GROUP BY ALL ORDER BY bucket, outcome
        """,
        params,
    )
