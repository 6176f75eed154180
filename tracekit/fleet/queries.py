"""The fleet report's SQL, without pandas: each query returns plain rows (:class:`Rows`).

``tracekit fleet`` reads the store in a few queries, both windows at once
where it compares them: one ``GROUP BY`` of the runs by window, outcome and
origin (outcome shares, incomplete runs, failures by origin); one of the
circles (with whether the previous window saw each); the newest degraded
runs; one ``GROUP BY`` of the calls by caller and callee (the delegation
edges, and the calls made to each failure's origin agent); the latency
percentiles (the loops' cost: :mod:`tracekit.fleet.loops`). :mod:`tracekit.fleet.tables` turns the rows into the report's
tables; :mod:`tracekit.fleet` into DataFrames.

Run-level queries count root runs that started in the window, of the
service, whose tree invoked the agent; call-level queries count the calls
that started in the window, of the service (the agent filter applies to
caller and callee after grouping).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import duckdb

from tracekit.store.query import parse_since

__all__ = [
    "CALL_STATUSES_RAN",
    "FleetFilter",
    "Rows",
    "bucket_step",
    "calls_source",
    "circle_rows",
    "degraded_rows",
    "edge_rows",
    "fetch",
    "latency_rows",
    "over_time_rows",
    "run_groups",
    "session_counts",
    "token_rows",
    "worst_rows",
]

# Calls that did not run (refused) or have no end yet have no duration to rank.
CALL_STATUSES_RAN: Final = "status NOT IN ('refused', 'running', 'pending')"


@dataclass(frozen=True, slots=True)
class Rows:
    """A query result: column names, DuckDB type names, and the rows as tuples."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]

    def __len__(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts, column name to value."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def column(self, name: str) -> list[Any]:
        """One column's values."""
        at = self.columns.index(name)
        return [row[at] for row in self.rows]


def fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Rows:
    """Run a query and keep its rows as tuples (no DataFrame: no pandas import)."""
    cursor = con.execute(sql, params or [])
    description = cursor.description or []
    return Rows(
        columns=tuple(d[0] for d in description),
        types=tuple(str(d[1]) for d in description),
        rows=cursor.fetchall(),
    )


@dataclass(frozen=True, slots=True)
class FleetFilter:
    """Which runs and calls a metric looks at.

    Attributes:
        start: the window opens (naive UTC); None for the whole store.
        end: the window closes (exclusive); None for no bound.
        service: only this service.
        agent: only runs that invoked this agent (or calls by or to it).
        partitioned: the tables have the lake's ``day`` partition key: the window
            constrains it too, so that files outside the window are never opened.
    """

    start: datetime | None = None
    end: datetime | None = None
    service: str | None = None
    agent: str | None = None
    partitioned: bool = False

    @classmethod
    def make(
        cls,
        since: str | datetime | None = None,
        service: str | None = None,
        agent: str | None = None,
        *,
        now: datetime | None = None,
    ) -> FleetFilter:
        """A filter from the CLI's options; ``since`` is a span back from ``now`` or a time."""
        now = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
        start = parse_since(since, now=now) if isinstance(since, str) else since
        return cls(
            start=start, end=now if start is not None else None, service=service, agent=agent
        )

    def previous(self) -> FleetFilter | None:
        """The window of the same length just before this one (None without a window)."""
        if self.start is None or self.end is None:
            return None
        length = self.end - self.start
        return replace(self, start=self.start - length, end=self.start)

    def _days(self, p: str) -> tuple[list[str], list[Any]]:
        """The window on the ``day`` partition key (a row's day is its start's, in UTC).

        The end is inclusive: a window ending at noon needs that day's partition.
        """
        if not self.partitioned:
            return [], []
        where: list[str] = []
        params: list[Any] = []
        if self.start is not None:
            where.append(f"{p}day >= ?")
            params.append(self.start.strftime("%Y-%m-%d"))
        if self.end is not None:
            where.append(f"{p}day <= ?")
            params.append(self.end.strftime("%Y-%m-%d"))
        return where, params

    def runs_where(self, alias: str = "") -> tuple[str, list[Any]]:
        """SQL conditions on ``runs`` and their parameters."""
        p = f"{alias}." if alias else ""
        where: list[str] = ["TRUE"]
        params: list[Any] = []
        if self.start is not None:
            where.append(f"{p}start_at >= ?")
            params.append(self.start)
        if self.end is not None:
            where.append(f"{p}start_at < ?")
            params.append(self.end)
        if self.service is not None:
            where.append(f"{p}service = ?")
            params.append(self.service)
        days, day_params = self._days(p)
        where += days
        params += day_params
        if self.agent is not None:
            where.append(
                f"({p}agent = ? OR {p}run_id IN"
                " (SELECT root_run_id FROM invocations WHERE agent = ?))"
            )
            params += [self.agent, self.agent]
        return " AND ".join(where), params

    def calls_where(self, alias: str) -> tuple[str, list[Any]]:
        """SQL conditions on ``invocations`` (the window by the call's own start)."""
        where: list[str] = ["TRUE"]
        params: list[Any] = []
        for column, op, value in (
            ("start_at", ">=", self.start),
            ("start_at", "<", self.end),
            ("service", "=", self.service),
        ):
            if value is not None:
                where.append(f"{alias}.{column} {op} ?")
                params.append(value)
        days, day_params = self._days(f"{alias}.")
        return " AND ".join(where + days), params + day_params


def _span(flt: FleetFilter, prev: FleetFilter | None) -> tuple[str, list[Any], str, list[Any]]:
    """Conditions for both windows at once, and the expression telling the current one."""
    both = replace(flt, start=prev.start) if prev else flt
    where, params = both.runs_where()
    if prev is None:
        return where, params, "TRUE", []
    return where, params, "start_at >= ?", [flt.start]


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
