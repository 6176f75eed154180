"""The fleet report's reads, each returning plain rows (:class:`Rows`): the store owns their SQL.

``tracekit fleet`` reads the store in a few queries, both windows at once
where it compares them (:mod:`tracekit.store.fleet_runs`: the runs by
outcome and origin, the circles, the degraded and worst runs, the sessions,
the runs over time), the calls by caller and callee, each agent's latency
and tokens (:mod:`tracekit.store.fleet_agents`), and the loops' cost
(:func:`tracekit.store.circles.loop_rows`). This module names the ones the
fleet's modules use; :mod:`tracekit.fleet.tables` turns the rows into the
report's tables, :mod:`tracekit.fleet.frames` into DataFrames.
"""

from __future__ import annotations

from tracekit.store import (
    CALL_STATUSES_RAN,
    FleetFilter,
    Rows,
    bucket_step,
    calls_source,
    circle_rows,
    degraded_rows,
    edge_rows,
    fetch,
    latency_rows,
    loop_rows,
    over_time_rows,
    run_groups,
    session_counts,
    token_rows,
    worst_rows,
)

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
    "loop_rows",
    "over_time_rows",
    "run_groups",
    "session_counts",
    "token_rows",
    "worst_rows",
]
