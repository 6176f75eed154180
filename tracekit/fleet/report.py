"""Fleet health: the metrics an operator reads every morning, as DataFrames.

Each function takes a store and the same filters (``since``: a span back from
now such as ``24h``, or an ISO time; ``service``; ``agent``) and returns a
pandas DataFrame; :func:`fleet_report` gathers them all, with the change
against the previous window of the same length. Every function only reads:
the store classified its runs when they were written
(:func:`tracekit.store.classify.classify_store`, called by every ingest).

Run-level metrics (outcomes, circles, failures, degraded runs) count root runs
that started in the window, of the service, whose tree invoked the agent.
Call-level metrics (latency, delegation edges) count the invocations that
started in the window, of the service, made by or to the agent.

The store owns the queries (:mod:`tracekit.store.fleet_runs`,
:mod:`tracekit.store.fleet_agents`), which fetch plain rows;
:class:`FleetReport` keeps those rows and makes a DataFrame of a table when
it is first read, so ``tracekit fleet`` never imports pandas.

Example:
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     report = fleet_report(store, since="24h")
    >>> report.outcomes[["outcome", "runs", "share"]]
                outcome  runs  share
    0                ok    34  0.850
    1          degraded     4  0.100
    2  failed:recursion     1  0.025
    3      failed:child     1  0.025
    4    failed:refused     0  0.000
    5         cancelled     0  0.000
    6        incomplete     0  0.000
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import duckdb

from tracekit._util.sql import StoreOrConnection, connection
from tracekit.failures.outcomes import STALE_AFTER_MS
from tracekit.fleet.frames import circles_frame, outcomes_frame, to_frame, without_column
from tracekit.fleet.memory import within_memory
from tracekit.fleet.options import DEFAULT_LIMIT, Engine, FleetOptions, Percentiles
from tracekit.fleet.tables import (
    circles_table,
    edges_table,
    failures_table,
    incomplete_counts,
    outcome_counts,
    outcomes_table,
)
from tracekit.store import (
    FleetFilter,
    Rows,
    Store,
    calls_source,
    circle_rows,
    degraded_rows,
    edge_rows,
    latency_rows,
    loop_rows,
    over_time_rows,
    run_groups,
    session_counts,
    token_rows,
    worst_rows,
)
from tracekit.store.db import default_path
from tracekit.store.query import check_names

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console, ConsoleOptions, RenderResult

__all__ = [
    "DEFAULT_LIMIT",
    "FleetFilter",
    "FleetOptions",
    "FleetReport",
    "agent_latency",
    "agent_tokens",
    "child_failures",
    "degraded_runs",
    "delegation_edges",
    "fleet_report",
    "fleet_report_with",
    "incomplete_states",
    "loop_costs",
    "open_for_report",
    "outcome_shares",
    "outcomes_over_time",
    "recursion_circles",
    "worst_runs",
]


def open_for_report(db: str | os.PathLike[str] | None, *, wait: float = 0.0) -> Store:
    """Open a store to report on, read-only: every write has classified its runs already.

    While another process writes the store, try again for up to ``wait`` seconds.

    Raises:
        StoreError: there is no store at ``db`` (a report never creates one).
        StoreLockedError: still locked after ``wait`` seconds.
    """
    return Store(Path(db) if db is not None else default_path(), read_only=True, wait=wait)


def _source(store: StoreOrConnection) -> tuple[duckdb.DuckDBPyConnection, str]:
    con = connection(store)
    return con, calls_source(con)


def _running_since(now: datetime | None) -> float:
    return (now or datetime.now(UTC)).timestamp() * 1000.0 - STALE_AFTER_MS


def outcome_shares(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Runs of each outcome and their share (every outcome listed, zero or not).

    Columns: ``outcome``, ``runs``, ``share`` (0..1).
    """
    groups = run_groups(connection(store), flt or FleetFilter(), None, 0.0)
    return outcomes_frame(outcomes_table(groups, compare=False), compare=False)[
        ["outcome", "runs", "share"]
    ]


def incomplete_states(
    store: Any, flt: FleetFilter | None = None, *, now: datetime | None = None
) -> dict[str, int]:
    """Incomplete runs told apart by age: ``crashed`` (quiet for 15 minutes) or ``running``."""
    return incomplete_counts(
        run_groups(connection(store), flt or FleetFilter(), None, _running_since(now))
    )


def recursion_circles(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Every recursion circle seen, each one to act on even if it happened once.

    A circle whose refusal a caller handled (the run is ``degraded``) is still
    a circle: the flow will take that route again. Columns: ``circle``,
    ``runs``, ``failed`` (runs it failed), ``services``, ``first_seen``,
    ``last_seen``, ``action`` (always True).
    """
    table = circles_table(circle_rows(connection(store), flt or FleetFilter()), compare=False)
    return to_frame(without_column(table, "new"))


def child_failures(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Failed runs by where the failure began: origin agent and code, with rates.

    Columns: ``outcome`` (failed:child or failed:refused), ``origin_agent``,
    ``origin_code``, ``runs``, ``share`` (of all runs in the window) and
    ``rate`` (failed runs that began there, per call made to that agent).
    """
    con, source = _source(store)
    flt = flt or FleetFilter()
    groups = run_groups(con, flt, None, 0.0)
    return to_frame(failures_table(groups, edge_rows(con, flt, source)))


def degraded_runs(store: Any, flt: FleetFilter | None = None, *, limit: int = 20) -> pd.DataFrame:
    """Runs that ended ok while a delegation or a step inside failed: newest first.

    Columns: ``run_id``, ``start_at``, ``service``, ``agent``,
    ``origin_agent``, ``origin_code``, ``circle``, ``failed_invocations``, ``duration_ms``.
    """
    return to_frame(degraded_rows(connection(store), flt or FleetFilter(), limit))


def worst_runs(store: Any, flt: FleetFilter | None = None, *, limit: int = 5) -> pd.DataFrame:
    """The failed runs most worth a look: circles first, then most failed calls, longest.

    Columns: ``run_id``, ``outcome``, ``start_at``, ``service``, ``agent``,
    ``circle``, ``origin_agent``, ``origin_code``, ``failed_invocations``, ``duration_ms``.
    """
    return to_frame(worst_rows(connection(store), flt or FleetFilter(), limit))


def agent_latency(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Duration percentiles of each agent's invocations that ran (refusals did not).

    Columns: ``agent``, ``calls``, ``failed`` (threw), ``p50_ms``, ``p95_ms``,
    ``p99_ms``, and ``own_p50_ms``, ``own_p95_ms``: the same calls' own time
    (less the time their own calls covered), slowest own p95 first.
    """
    con, source = _source(store)
    return to_frame(latency_rows(con, flt or FleetFilter(), source))


def agent_tokens(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Each agent's own model tokens in the window, most input tokens first.

    Columns: ``agent``, ``calls`` (that reported usage), ``input_tokens``,
    ``output_tokens`` (sums), ``median_input_tokens``, ``median_output_tokens``
    (per call).
    """
    con, source = _source(store)
    return to_frame(token_rows(con, flt or FleetFilter(), source))


def loop_costs(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """What every circle's loops cost in the window, split by how they stopped.

    A loop stopped at a framework's limit (``limit``), was cut off without an
    error (``silent``), was refused on the call path (``refused``) or ran and
    finished (``finished``): the silent ones burn as much as the refused ones.
    Columns: ``circle``, ``stopped``, ``runs``, ``revisits``, ``invocations``,
    ``model_calls``, ``input_tokens``, ``output_tokens``, ``duration_ms`` (sums
    over the runs), ``tokens_per_run``, ``model_calls_per_run``, ``ms_per_run``
    and ``limit_codes``; costliest circle first.

    Example:
        >>> from tracekit.store import Store
        >>> with Store("fleet.duckdb", read_only=True) as store:
        ...     costs = loop_costs(store)
        >>> first = costs.iloc[0]
        >>> first["circle"], first["stopped"], int(first["runs"])
        ('billing -> invoices -> billing', 'refused', 1)
    """
    return to_frame(loop_rows(connection(store), flt or FleetFilter()))


def delegation_edges(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Who calls whom: caller agent to callee agent, with counts and failure rates.

    A call the root run made has the root's agent as its caller. Columns:
    ``caller``, ``callee``, ``calls``, ``failed`` (threw or refused),
    ``refused``, ``failure_rate``.
    """
    con, source = _source(store)
    flt = flt or FleetFilter()
    return to_frame(edges_table(edge_rows(con, flt, source), flt.agent))


def outcomes_over_time(store: Any, flt: FleetFilter | None = None) -> pd.DataFrame:
    """Runs of each outcome per time bucket (about 60 buckets over the window).

    Columns: ``bucket`` (start of the bucket, UTC), ``outcome``, ``runs``.
    """
    return to_frame(over_time_rows(connection(store), flt or FleetFilter()))


_TABLES: Final = (
    "outcomes",
    "circles",
    "failures",
    "degraded",
    "latency",
    "edges",
    "tokens",
    "loops",
)


@dataclass(slots=True)
class FleetReport:
    """Everything ``tracekit fleet`` prints: each table as rows, and as a DataFrame on demand.

    ``outcomes`` has, beside ``runs`` and ``share``, ``previous_runs``,
    ``previous_share`` and ``change`` (share points) against the previous
    window of the same length, when there is a window. ``loops`` is the cost
    of each circle's loops by how they stopped (:func:`loop_costs`). ``sessions`` counts
    the window's sessions (``sessions``), those with a failed run
    (``failed``) and their runs (``runs``). ``circles`` marks the
    circles not seen in the previous window as ``new``. ``tables`` holds the
    same tables as plain rows (:class:`tracekit.store.fetched.Rows`).
    """

    filter: FleetFilter
    runs: int
    incomplete: dict[str, int]
    tables: dict[str, Rows]
    previous_runs: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, int] = field(default_factory=dict)
    #: Each capped list's full length (``degraded``, ``circles``): the rows held are a page of it.
    totals: dict[str, int] = field(default_factory=dict)
    #: The page the capped lists hold: ``limit`` rows (None: all) from ``offset``.
    page: dict[str, int | None] = field(default_factory=lambda: {"limit": None, "offset": 0})
    _frames: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False, compare=False)

    def frame(self, name: str) -> pd.DataFrame:
        """One table as a DataFrame (made once, then the same object)."""
        if name not in self._frames:
            compare = self.previous_runs is not None
            rows = self.tables[name]
            if name == "outcomes":
                self._frames[name] = outcomes_frame(rows, compare=compare)
            elif name == "circles":
                self._frames[name] = circles_frame(rows, compare=compare)
            else:
                self._frames[name] = to_frame(rows)
        return self._frames[name]

    @property
    def outcomes(self) -> pd.DataFrame:
        """Runs, share and change of each outcome."""
        return self.frame("outcomes")

    @property
    def circles(self) -> pd.DataFrame:
        """The recursion circles, each to act on."""
        return self.frame("circles")

    @property
    def failures(self) -> pd.DataFrame:
        """Failed runs by origin agent and code."""
        return self.frame("failures")

    @property
    def degraded(self) -> pd.DataFrame:
        """The degraded runs, newest first (a page of ``totals["degraded"]``)."""
        return self.frame("degraded")

    @property
    def latency(self) -> pd.DataFrame:
        """p50/p95/p99 by agent."""
        return self.frame("latency")

    @property
    def edges(self) -> pd.DataFrame:
        """The delegation edges."""
        return self.frame("edges")

    @property
    def tokens(self) -> pd.DataFrame:
        """Own model tokens by agent: totals and median per call."""
        return self.frame("tokens")

    @property
    def loops(self) -> pd.DataFrame:
        """The cost of each circle's loops by how they stopped (a page of ``totals["loops"]``)."""
        return self.frame("loops")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The report as rich tables: ``rich.print(report)`` or ``console.print(report)``."""
        from tracekit.fleet.text import renderables  # rich: only when the report is drawn

        yield from renderables(self)

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
            "sessions": self.sessions,
            "totals": self.totals,
            "page": self.page,
            **{
                name: [
                    {k: _plain(v) for k, v in row.items()} for row in self.tables[name].records()
                ]
                for name in _TABLES
                if name in self.tables
            },
        }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat() + "Z"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, float) and value != value:
        return None
    return value


def fleet_report(
    store: Any = None,
    *,
    since: str | datetime | None = None,
    service: str | None = None,
    agent: str | None = None,
    now: datetime | None = None,
    lake: str | os.PathLike[str] | None = None,
    engine: Engine = "duckdb",
    remote: str | None = None,
    percentiles: Percentiles = "exact",
    limit: int | None = DEFAULT_LIMIT,
    offset: int = 0,
) -> FleetReport:
    """The whole fleet report for a window, with the change against the previous one.

    A few queries (the store's fleet reads), both windows at once where they compare.
    The keywords are those of :class:`tracekit.fleet.options.FleetOptions`
    (:func:`fleet_report_with` takes one).

    Args:
        store: a :class:`tracekit.store.Store` (only read: every ingest classified its runs).
        since: a span back from now (``24h``, ``7d``) or an ISO time; None for all.
        service: only this service.
        agent: only runs that invoked this agent, calls by or to it.
        now: the end of the window (default: the clock).
        lake: instead of ``store``, a lake exported by ``tracekit export`` (``docs/lake.md``).
        engine: what reads the lake: ``"duckdb"`` (here) or ``"spark"`` (``remote``).
        remote: the Spark Connect address, ``sc://HOST:15002``.
        percentiles: ``"exact"`` (on every engine) or ``"approx"`` (each
            engine's own sketch: faster on a large lake, not equal across engines).
        limit: rows of each list of runs or circles (degraded runs, circles)
            the report holds; their full counts are in ``totals``. None: all.
        offset: where the page of those lists starts (newest degraded run: 0).

    Raises:
        StoreError: no run has ``service`` or ``agent`` (the error lists the known ones).
        LakeError: no lake there, or the Spark server cannot be reached.
        TracekitError: a query needs more memory than ``TRACEKIT_DB_MEMORY``
            allows (the message says what to change).
    """
    options = FleetOptions(
        since=since,
        service=service,
        agent=agent,
        now=now,
        lake=lake,
        engine=engine,
        remote=remote,
        percentiles=percentiles,
        limit=limit,
        offset=offset,
    )
    return fleet_report_with(store, options)


def fleet_report_with(store: Any, options: FleetOptions) -> FleetReport:
    """:func:`fleet_report` with its options in one object (what ``tracekit fleet`` passes).

    Example:
        >>> with Store("fleet.duckdb", read_only=True) as store:
        ...     report = fleet_report_with(store, FleetOptions(since="24h", limit=5))
        >>> report.page
        {'limit': 5, 'offset': 0}
    """
    if options.lake is not None:
        from tracekit.lake.engine import open_lake

        with open_lake(options.lake, engine=options.engine, remote=options.remote) as con:
            # The Spark engine answers execute/description/fetchall as DuckDB does.
            spark = not isinstance(con, duckdb.DuckDBPyConnection)
            with within_memory(options.percentiles, engine="spark" if spark else "duckdb"):
                return _report(cast(duckdb.DuckDBPyConnection, con), "fleet_calls", options)
    if store is None:
        raise TypeError("fleet_report() needs a store or a lake")
    con, source = _source(store)
    with within_memory(options.percentiles):
        return _report(con, source, options)


def _report(con: duckdb.DuckDBPyConnection, source: str, options: FleetOptions) -> FleetReport:
    flt = options.filter()
    check_names(con, service=flt.service, agent=flt.agent)
    prev = flt.previous()
    groups = run_groups(con, flt, prev, _running_since(options.now))
    edges = edge_rows(con, flt, source)
    circles = circles_table(circle_rows(con, flt, prev), compare=prev is not None)
    loops = loop_rows(con, flt)
    tables = {
        "outcomes": outcomes_table(groups, compare=prev is not None),
        "circles": options.page(circles),
        "failures": failures_table(groups, edges),
        "degraded": degraded_rows(con, flt, options.limit, options.offset),
        "latency": latency_rows(con, flt, source, approx=options.percentiles == "approx"),
        "edges": edges_table(edges, flt.agent),
        "tokens": token_rows(con, flt, source),
        "loops": options.page(loops),
    }
    return FleetReport(
        filter=flt,
        runs=sum(outcome_counts(groups).values()),
        incomplete=incomplete_counts(groups),
        tables=tables,
        previous_runs=sum(outcome_counts(groups, False).values()) if prev else None,
        sessions=session_counts(con, flt),
        totals={
            "degraded": outcome_counts(groups).get("degraded", 0),
            "circles": len(circles),
            "loops": len(loops),
        },
        page={"limit": options.limit, "offset": options.offset},
    )
