"""The fleet report's reads of the calls: who called whom, each agent's latency and tokens.

Call-level reads count the calls that started in the window, of the service
(the agent filter applies to caller and callee after grouping). They read
``fleet_calls`` when it is up to date, else the same rows joined on the fly
(:func:`calls_source`). They run unchanged on a lake, on DuckDB or Spark.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     source = calls_source(store.con)
    ...     rows = edge_rows(store.con, FleetFilter(), source)
    >>> rows.columns[:3]
    ('caller', 'callee', 'calls')
"""

from __future__ import annotations

from typing import Final

import duckdb

from tracekit.store.fetched import Rows, fetch
from tracekit.store.fleet_filter import FleetFilter

__all__ = ["CALL_STATUSES_RAN", "calls_source", "edge_rows", "latency_rows", "token_rows"]

# Calls that did not run (refused) or have no end yet have no duration to rank.
CALL_STATUSES_RAN: Final = "status NOT IN ('refused', 'running', 'pending')"


# The calls with their caller, joined on the fly: what ``fleet_calls`` holds.
_JOINED_CALLS: Final = """(
    SELECT i.root_run_id, i.invocation_id, coalesce(p.agent, r.agent, '?') AS caller, i.agent,
        i.service, i.start_at, i.status, i.duration_ms, i.own_ms, i.input_tokens, i.output_tokens
    FROM invocations i
    LEFT JOIN invocations p ON p.invocation_id = i.parent_invocation_id
    LEFT JOIN runs r ON i.parent_invocation_id IS NULL AND r.run_id = i.parent_run_id
    WHERE i.root_run_id IS NOT NULL
)"""


def calls_source(con: duckdb.DuckDBPyConnection, *, unclassified: int | None = None) -> str:
    """``fleet_calls`` when it is up to date (every run classified), else the join itself.

    ``unclassified`` is the count of runs not classified yet, when the caller knows it.
    """
    row = con.execute(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE table_name = 'fleet_calls'),"
        + (
            " 0"
            if unclassified == 0
            else " (SELECT count(*) FROM runs WHERE classified_at IS NULL)"
        )
    ).fetchone()
    return "fleet_calls" if row and row[0] and not row[1] else _JOINED_CALLS


def edge_rows(con: duckdb.DuckDBPyConnection, flt: FleetFilter, source: str) -> Rows:
    """Calls by caller and callee in the window, most first (every agent: filter after)."""
    where, params = flt.calls_where("i")
    return fetch(
        con,
        f"""
        SELECT caller, agent AS callee, count(*) AS calls,
            count(*) FILTER (WHERE status IN ('error', 'refused')) AS failed,
            count(*) FILTER (WHERE status = 'refused') AS refused
        FROM {source} i WHERE {where} GROUP BY ALL
        ORDER BY calls DESC, caller, callee
        """,
        params,
    )


def latency_rows(
    con: duckdb.DuckDBPyConnection, flt: FleetFilter, source: str, *, approx: bool = False
) -> Rows:
    """Exact p50/p95/p99 of each agent's calls that ran, and p50/p95 of their own time.

    Own time is a call's duration less the time its own calls covered
    (``invocations.own_ms``): an agent that only waits on a slow callee has a
    long total and a short own time. Slowest own p95 first, so the slow agent
    heads the table, not the ones waiting for it.

    ``approx``: DuckDB's ``approx_quantile`` (a t-digest) instead, named so
    because its answer is not the exact one (and differs between engines).
    """
    quantile = "approx_quantile" if approx else "quantile_cont"
    where, params = flt.calls_where("i")
    where += f" AND i.{CALL_STATUSES_RAN}"
    if flt.agent is not None:
        where += " AND i.agent = ?"
        params.append(flt.agent)
    return fetch(
        con,
        f"""
        SELECT agent, calls, failed, q[1] AS p50_ms, q[2] AS p95_ms, q[3] AS p99_ms,
            own[1] AS own_p50_ms, own[2] AS own_p95_ms FROM (
            SELECT agent, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS failed,
                {quantile}(duration_ms, [0.5, 0.95, 0.99]) AS q,
                {quantile}(own_ms, [0.5, 0.95]) AS own
            FROM {source} i WHERE {where} GROUP BY agent
        ) ORDER BY own_p95_ms DESC NULLS LAST, p95_ms DESC NULLS LAST, agent
        """,
        params,
    )


def token_rows(con: duckdb.DuckDBPyConnection, flt: FleetFilter, source: str) -> Rows:
    """Each agent's own model tokens: totals, and the median per call that reported usage.

    Own tokens only, so no token counts twice: a call's own usage
    (``invocations.input_tokens``), and a root agent's own usage on its run
    (``runs.own_input_tokens``: it has no call of its own, its run stands for
    one, in the window by the run's start). Summed over every agent, they are
    the runs' totals (``runs.input_tokens``). An agent with no run.start is
    ``?``. Most input tokens first; agents without usage are left out.
    """
    where, params = flt.calls_where("i")
    run_where, run_params = flt.calls_where("r")
    if flt.agent is not None:
        where += " AND i.agent = ?"
        run_where += " AND coalesce(r.agent, '?') = ?"
        params.append(flt.agent)
        run_params.append(flt.agent)
    return fetch(
        con,
        f"""
        WITH own AS (
            SELECT i.agent, i.input_tokens, i.output_tokens FROM {source} i WHERE {where}
            UNION ALL
            SELECT coalesce(r.agent, '?') AS agent, r.own_input_tokens AS input_tokens,
                r.own_output_tokens AS output_tokens
            FROM runs r
            WHERE (r.own_input_tokens IS NOT NULL OR r.own_output_tokens IS NOT NULL)
                AND {run_where}
        )
        SELECT agent,
            count(*) FILTER (WHERE input_tokens IS NOT NULL OR output_tokens IS NOT NULL)
                AS calls,
            sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
            median(input_tokens) AS median_input_tokens,
            median(output_tokens) AS median_output_tokens
        FROM own GROUP BY agent
        HAVING count(input_tokens) + count(output_tokens) > 0
        ORDER BY input_tokens DESC NULLS LAST, output_tokens DESC NULLS LAST, agent
        """,
        params + run_params,
    )
