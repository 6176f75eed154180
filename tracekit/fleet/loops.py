"""The loop cost of every circle, by how the loop stopped: the fleet report's ``loops`` table.

The classification writes one ``loops`` row for each run and circle its agents
went round (``docs/store.md``); this reads them for the window's runs, the
same run filter as every run-level table (:class:`~tracekit.fleet.queries.FleetFilter`).
It runs unchanged on a lake, on DuckDB or Spark.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     rows = loop_rows(store.con, FleetFilter())
    >>> rows.records()[0]["stopped"]
    'refused'
"""

from __future__ import annotations

from typing import Final

import duckdb

from tracekit.fleet.queries import FleetFilter, Rows, fetch

__all__ = ["loop_rows"]


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
