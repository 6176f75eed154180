"""Fleet health: the metrics an operator reads every morning, as DataFrames.

Each function takes a store and the same filters (``since``: a span back from
now such as ``24h``, or an ISO time; ``service``; ``agent``) and returns a
pandas DataFrame; :func:`fleet_report` gathers them all, with the change
against the previous window of the same length. Every function classifies
the store's new runs first (:func:`tracekit.failures.classify_store`) when
the store is writable.

Run-level metrics (outcomes, circles, failures, degraded runs) count root runs
that started in the window, of the service, whose tree invoked the agent.
Call-level metrics (latency, delegation edges) count the invocations that
started in the window, of the service, made by or to the agent.

Example:
    >>> report = fleet_report(Store("fleet.duckdb"), since="24h")  # doctest: +SKIP
    >>> report.outcomes[["outcome", "runs", "share"]]  # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Protocol

import duckdb
import pandas as pd

from tracekit.errors import StoreLockedError
from tracekit.failures import OUTCOMES, classify_store
from tracekit.failures.rules import STALE_AFTER_MS
from tracekit.store import Store
from tracekit.store.db import default_path
from tracekit.store.query import parse_since

__all__ = [
    "FleetFilter",
    "FleetReport",
    "agent_latency",
    "child_failures",
    "degraded_runs",
    "delegation_edges",
    "fleet_report",
    "open_for_report",
    "outcome_shares",
    "outcomes_over_time",
    "recursion_circles",
    "worst_runs",
]


class _HasCon(Protocol):
    con: duckdb.DuckDBPyConnection
    read_only: bool


@dataclass(frozen=True, slots=True)
class FleetFilter:
    """Which runs and calls a metric looks at.

    Attributes:
        start: the window opens (naive UTC); None for the whole store.
        end: the window closes (exclusive); None for no bound.
        service: only this service.
        agent: only runs that invoked this agent (or calls by or to it).
    """

    start: datetime | None = None
    end: datetime | None = None
    service: str | None = None
    agent: str | None = None

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
        return FleetFilter(self.start - length, self.start, self.service, self.agent)

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
        return " AND ".join(where), params


def open_for_report(db: str | os.PathLike[str] | None) -> Store:
    """Open a store to report on: for writing, so new runs get classified first;
    read-only when another process holds it (the report then reads what is classified).
    """
    path = Path(db) if db is not None else default_path()
    if not path.exists():  # a report never creates an empty store
        return Store(path, read_only=True)  # raises StoreError: no store here
    try:
        return Store(path)
    except StoreLockedError:
        return Store(path, read_only=True)


def _con(store: _HasCon | duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    if isinstance(store, duckdb.DuckDBPyConnection):
        return store
    if not getattr(store, "read_only", False):
        classify_store(store)
    return store.con


# The calls with their caller, joined on the fly: what ``fleet_calls`` holds.
_JOINED_CALLS: Final = """(
    SELECT i.root_run_id, i.invocation_id, coalesce(p.agent, r.agent, '?') AS caller, i.agent,
        i.service, i.start_at, i.status, i.duration_ms
    FROM invocations i
    LEFT JOIN invocations p ON p.invocation_id = i.parent_invocation_id
    LEFT JOIN runs r ON i.parent_invocation_id IS NULL AND r.run_id = i.parent_run_id
    WHERE i.root_run_id IS NOT NULL
)"""


def _calls(con: duckdb.DuckDBPyConnection) -> str:
    """``fleet_calls`` when it is up to date (every run classified), else the join itself."""
    row = con.execute(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE table_name = 'fleet_calls'),"
        " (SELECT count(*) FROM runs WHERE classified_at IS NULL)"
    ).fetchone()
    return "fleet_calls" if row and row[0] and not row[1] else _JOINED_CALLS


def _df(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pd.DataFrame:
    return con.execute(sql, params).df()


def outcome_shares(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Runs of each outcome and their share (every outcome listed, zero or not).

    Columns: ``outcome``, ``runs``, ``share`` (0..1).
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.runs_where()
    counts = _df(
        con, f"SELECT outcome, count(*) AS runs FROM runs WHERE {where} GROUP BY ALL", params
    )
    frame = pd.DataFrame({"outcome": list(OUTCOMES)}).merge(counts, how="left", on="outcome")
    frame["runs"] = frame["runs"].fillna(0).astype("int64")
    total = int(frame["runs"].sum())
    frame["share"] = frame["runs"] / total if total else 0.0
    return frame


def incomplete_states(
    store: Any, flt: FleetFilter | None = None, *, now: datetime | None = None
) -> dict[str, int]:
    """Incomplete runs told apart by age: ``crashed`` (quiet for 15 minutes) or ``running``."""
    con, flt = _con(store), flt or FleetFilter()
    now_ms = (now or datetime.now(UTC)).timestamp() * 1000.0
    where, params = flt.runs_where()
    row = con.execute(
        f"SELECT count(*) FILTER (WHERE coalesce(end_ms, start_ms, 0) >= ?),"
        f" count(*) FROM runs WHERE outcome = 'incomplete' AND {where}",
        [now_ms - STALE_AFTER_MS, *params],
    ).fetchone()
    running, total = (int(row[0]), int(row[1])) if row else (0, 0)
    return {"crashed": total - running, "running": running}


def recursion_circles(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Every recursion circle seen, each one to act on even if it happened once.

    A circle whose refusal a caller handled (the run is ``degraded``) is still
    a circle: the flow will take that route again. Columns: ``circle``,
    ``runs``, ``failed`` (runs it failed), ``services``, ``first_seen``,
    ``last_seen``, ``action`` (always True).
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.runs_where()
    return _df(
        con,
        f"""
        SELECT circle, count(*) AS runs,
            count(*) FILTER (WHERE outcome = 'failed:recursion') AS failed,
            string_agg(DISTINCT coalesce(service, '?'), ', ' ORDER BY coalesce(service, '?')) AS services,
            min(start_at) AS first_seen, max(start_at) AS last_seen, TRUE AS action
        FROM runs WHERE circle IS NOT NULL AND {where}
        GROUP BY circle ORDER BY runs DESC, circle
        """,
        params,
    )


def child_failures(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Failed runs by where the failure began: origin agent and code, with rates.

    Columns: ``outcome`` (failed:child or failed:refused), ``origin_agent``,
    ``origin_code``, ``runs``, ``share`` (of all runs in the window) and
    ``rate`` (failed runs that began there, per call made to that agent).
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.runs_where("r")
    calls, call_params = flt.calls_where("i")
    source = _calls(con)
    return _df(
        con,
        f"""
        WITH r AS (SELECT * FROM runs r WHERE {where}),
        f AS (
            SELECT outcome, origin_agent, origin_code, count(*) AS runs FROM r
            WHERE outcome IN ('failed:child', 'failed:refused') GROUP BY ALL
        ),
        used AS (
            SELECT i.agent, count(*) AS calls FROM {source} i
            WHERE i.agent IN (SELECT origin_agent FROM f) AND {calls} GROUP BY ALL
        )
        SELECT f.outcome, f.origin_agent, f.origin_code, f.runs,
            f.runs / (SELECT count(*) FROM r) AS share,
            f.runs / greatest(coalesce(used.calls, f.runs), 1) AS rate
        FROM f LEFT JOIN used ON used.agent = f.origin_agent
        ORDER BY f.runs DESC, f.origin_agent, f.origin_code
        """,
        params + call_params,
    )


def degraded_runs(store: Any, flt: FleetFilter | None = None, *, limit: int = 20) -> pd.DataFrame:
    """Runs that ended ok while a delegation inside failed: newest first.

    Columns: ``run_id``, ``start_at``, ``service``, ``agent``,
    ``origin_agent``, ``origin_code``, ``circle``, ``failed_invocations``, ``duration_ms``.
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.runs_where()
    return _df(
        con,
        f"""
        SELECT run_id, start_at, service, agent, origin_agent, origin_code, circle,
            failed_invocations, duration_ms
        FROM runs WHERE outcome = 'degraded' AND {where}
        ORDER BY start_ms DESC NULLS LAST, run_id LIMIT {int(limit)}
        """,
        params,
    )


def worst_runs(store: Any, flt: FleetFilter | None = None, *, limit: int = 5) -> pd.DataFrame:
    """The failed runs most worth a look: circles first, then most failed calls, longest.

    Columns: ``run_id``, ``outcome``, ``start_at``, ``service``, ``agent``,
    ``circle``, ``origin_agent``, ``origin_code``, ``failed_invocations``, ``duration_ms``.
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.runs_where()
    return _df(
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


def agent_latency(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Duration percentiles of each agent's invocations that ran (refusals did not).

    Columns: ``agent``, ``calls``, ``failed`` (threw), ``p50_ms``, ``p95_ms``, ``p99_ms``.
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.calls_where("i")
    where += " AND i.status NOT IN ('refused', 'running', 'pending')"
    if flt.agent is not None:
        where += " AND i.agent = ?"
        params.append(flt.agent)
    return _df(
        con,
        f"""
        SELECT agent, calls, failed, q[1] AS p50_ms, q[2] AS p95_ms, q[3] AS p99_ms FROM (
            SELECT agent, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS failed,
                quantile_cont(duration_ms, [0.5, 0.95, 0.99]) AS q
            FROM {_calls(con)} i WHERE {where} GROUP BY agent
        ) ORDER BY p95_ms DESC NULLS LAST, agent
        """,
        params,
    )


def delegation_edges(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Who calls whom: caller agent to callee agent, with counts and failure rates.

    A call the root run made has the root's agent as its caller. Columns:
    ``caller``, ``callee``, ``calls``, ``failed`` (threw or refused),
    ``refused``, ``failure_rate``.
    """
    con, flt = _con(store), flt or FleetFilter()
    where, params = flt.calls_where("i")
    outer, outer_params = "TRUE", []
    if flt.agent is not None:
        outer, outer_params = "(caller = ? OR callee = ?)", [flt.agent, flt.agent]
    return _df(
        con,
        f"""
        WITH e AS (
            SELECT caller, agent AS callee, count(*) AS calls,
                count(*) FILTER (WHERE status IN ('error', 'refused')) AS failed,
                count(*) FILTER (WHERE status = 'refused') AS refused
            FROM {_calls(con)} i WHERE {where} GROUP BY ALL
        )
        SELECT *, failed / calls AS failure_rate FROM e WHERE {outer}
        ORDER BY calls DESC, caller, callee
        """,
        params + outer_params,
    )


def _bucket(flt: FleetFilter, con: duckdb.DuckDBPyConnection) -> timedelta:
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


def outcomes_over_time(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Runs of each outcome per time bucket (about 60 buckets over the window).

    Columns: ``bucket`` (start of the bucket, UTC), ``outcome``, ``runs``.
    """
    con, flt = _con(store), flt or FleetFilter()
    step = _bucket(flt, con)
    where, params = flt.runs_where()
    return _df(
        con,
        f"""
        SELECT time_bucket(INTERVAL '{int(step.total_seconds())} seconds', start_at) AS bucket,
            outcome, count(*) AS runs
        FROM runs WHERE start_at IS NOT NULL AND {where}
        GROUP BY ALL ORDER BY bucket, outcome
        """,
        params,
    )


@dataclass(slots=True)
class FleetReport:
    """Everything ``tracekit fleet`` prints, as DataFrames.

    ``outcomes`` has, beside ``runs`` and ``share``, ``previous_runs``,
    ``previous_share`` and ``change`` (share points) against the previous
    window of the same length, when there is a window. ``circles`` marks the
    circles not seen in the previous window as ``new``.
    """

    filter: FleetFilter
    runs: int
    outcomes: pd.DataFrame
    incomplete: dict[str, int]
    circles: pd.DataFrame
    failures: pd.DataFrame
    degraded: pd.DataFrame
    latency: pd.DataFrame
    edges: pd.DataFrame
    previous_runs: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists of records, ISO times), ready for JSON."""
        return {
            "window": {
                "start": _iso(self.filter.start),
                "end": _iso(self.filter.end),
                "service": self.filter.service,
                "agent": self.filter.agent,
            },
            "runs": self.runs,
            "previous_runs": self.previous_runs,
            "incomplete": self.incomplete,
            **{
                name: _records(getattr(self, name))
                for name in ("outcomes", "circles", "failures", "degraded", "latency", "edges")
            },
        }


def _iso(moment: Any) -> str | None:
    if moment is None or (not isinstance(moment, str) and pd.isna(moment)):
        return None
    return pd.Timestamp(moment).isoformat() + "Z"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: _plain(v) for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (pd.Timestamp, datetime)):
        return _iso(value)
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def fleet_report(
    store: Any,
    *,
    since: str | datetime | None = None,
    service: str | None = None,
    agent: str | None = None,
    now: datetime | None = None,
) -> FleetReport:
    """The whole fleet report for a window, with the change against the previous one.

    Args:
        store: a :class:`tracekit.store.Store` (classified first if writable).
        since: a span back from now (``24h``, ``7d``) or an ISO time; None for all.
        service: only this service.
        agent: only runs that invoked this agent, calls by or to it.
        now: the end of the window (default: the clock).
    """
    con = _con(store)
    flt = FleetFilter.make(since, service, agent, now=now)
    outcomes = outcome_shares(con, flt)
    circles = recursion_circles(con, flt)
    report = FleetReport(
        filter=flt,
        runs=int(outcomes["runs"].sum()),
        outcomes=outcomes,
        incomplete=incomplete_states(con, flt, now=now),
        circles=circles,
        failures=child_failures(con, flt),
        degraded=degraded_runs(con, flt),
        latency=agent_latency(con, flt),
        edges=delegation_edges(con, flt),
    )
    _compare(report, con, flt.previous())
    return report


def _compare(report: FleetReport, con: duckdb.DuckDBPyConnection, prev: FleetFilter | None) -> None:
    frame = report.outcomes
    if prev is None:
        frame["previous_runs"] = pd.NA
        frame["previous_share"] = pd.NA
        frame["change"] = pd.NA
        report.circles["new"] = pd.NA
        return
    before = outcome_shares(con, prev)
    report.previous_runs = int(before["runs"].sum())
    frame["previous_runs"] = before["runs"].to_numpy()
    frame["previous_share"] = before["share"].to_numpy()
    frame["change"] = frame["share"] - frame["previous_share"]
    seen = set(recursion_circles(con, prev)["circle"])
    report.circles["new"] = ~report.circles["circle"].isin(seen)
