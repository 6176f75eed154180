"""What the pages read beyond the fleet report: every row, example runs, origins, calls, the span.

The fleet report caps its run lists for the terminal; the dashboard pages
through every row instead, so it reads them here, with the report's own
filter (:class:`~tracekit.store.fleet_filter.FleetFilter`), and the runs it
embeds (their calls, their summary lines) in one read each.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     span = store_span(store)
    >>> span.runs > 0 and span.first <= span.last
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from tracekit.store.fleet_filter import FleetFilter

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "StoreSpan",
    "circle_examples",
    "origin_failures",
    "run_calls",
    "run_summaries",
    "store_span",
]


@dataclass(frozen=True, slots=True)
class StoreSpan:
    """How many root runs the store holds, and when the first and the last started."""

    runs: int
    first: datetime | None
    last: datetime | None


def circle_examples(store: Any, flt: FleetFilter) -> dict[str, str]:
    """One run for each circle: the newest that failed on it, else the newest that met it."""
    where, params = flt.runs_where()
    rows = store.con.execute(
        f"""
        SELECT circle, arg_max(run_id, (outcome = 'failed:recursion', start_ms, run_id))
        FROM runs WHERE circle IS NOT NULL AND {where} GROUP BY circle
        """,
        params,
    ).fetchall()
    return {str(circle): str(run) for circle, run in rows}


def origin_failures(store: Any, flt: FleetFilter) -> pd.DataFrame:
    """Each agent's own calls in the window and how many failures began there.

    An agent's calls are its invocations and the runs it is the entry agent
    of: an entry agent is not judged by the few refused re-entries into it
    alone. A failure that began in an agent counts against it once; the
    callers that only wrapped it (``failure_role = 'wrapped'``) are not
    blamed. Columns: ``agent``, ``calls``, ``origins``.
    """
    calls, call_params = flt.calls_where("i")
    runs, run_params = flt.runs_where("r")
    return store.con.execute(
        f"""
        WITH own AS (
            SELECT i.agent, i.failure_role = 'origin' AS began
            FROM invocations i WHERE i.root_run_id IS NOT NULL AND {calls}
            UNION ALL
            SELECT r.agent, r.outcome LIKE 'failed:%' AND r.origin_invocation_id IS NULL
                AND r.origin_agent IS NOT NULL AND r.origin_step IS NULL
            FROM runs r WHERE r.agent IS NOT NULL AND {runs}
        )
        SELECT agent, count(*) AS calls, count(*) FILTER (WHERE began) AS origins
        FROM own GROUP BY agent
        """,
        call_params + run_params,
    ).df()


def store_span(store: Any) -> StoreSpan:
    """The store's root runs: how many, the first and the last start."""
    row = store.con.execute("SELECT count(*), min(start_at), max(start_at) FROM runs").fetchone()
    return StoreSpan(int(row[0]), row[1], row[2]) if row else StoreSpan(0, None, None)


def run_calls(store: Any, run_ids: list[str]) -> list[tuple[Any, ...]]:
    """The invocations of these root runs in one read, by run and start time.

    Each row: ``root_run_id, invocation_id, parent_invocation_id, agent, node,
    kind, status, start_ms, end_ms, duration_ms, error_code``.
    """
    return store.con.execute(
        """
        SELECT root_run_id, invocation_id, parent_invocation_id, agent, node, kind, status,
            start_ms, end_ms, duration_ms, error_code
        FROM invocations WHERE root_run_id IN (SELECT unnest(?::VARCHAR[]))
        ORDER BY root_run_id, start_ms NULLS LAST, invocation_id
        """,
        [run_ids],
    ).fetchall()


_SUMMARIES: Final = """
SELECT run_id, outcome, service, agent, invocations, circle, origin_agent, origin_code, origin_step
FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
"""


def run_summaries(store: Any, run_ids: list[str]) -> dict[str, tuple[Any, ...]]:
    """What each root run's summary line says, by run id (a child run has none).

    Each row: ``run_id, outcome, service, agent, invocations, circle,
    origin_agent, origin_code, origin_step``.
    """
    return {r[0]: r for r in store.con.execute(_SUMMARIES, [run_ids]).fetchall()}
