"""Fleet health: the metrics an operator reads every morning, from a classified store.

The store's fleet reads (:mod:`tracekit.store.fleet_runs`, :mod:`tracekit.store.fleet_agents`)
fetch plain rows; here:

- :mod:`~tracekit.fleet.report`: :func:`fleet_report` and the one-table
  functions, each a store and the same filters in, a DataFrame out;
- :mod:`~tracekit.fleet.options`: :class:`FleetOptions`, one report's options in one object;
- :mod:`~tracekit.fleet.tables`: the rows turned into the report's tables;
- :mod:`~tracekit.fleet.frames`: rows to DataFrames (pandas, on first use);
- :mod:`~tracekit.fleet.text`: the report as rich tables (``rich.print(report)``).
"""

from __future__ import annotations

from tracekit.fleet.report import (
    FleetFilter,
    FleetOptions,
    FleetReport,
    agent_latency,
    agent_tokens,
    child_failures,
    degraded_runs,
    delegation_edges,
    fleet_report,
    fleet_report_with,
    incomplete_states,
    loop_costs,
    open_for_report,
    outcome_shares,
    outcomes_over_time,
    recursion_circles,
    worst_runs,
)

__all__ = [
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
