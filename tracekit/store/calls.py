"""``fleet_calls``: every invocation with its caller agent resolved, kept beside the store.

Who called whom takes a self-join of ``invocations`` (a call's caller is the
agent of the invocation whose run made it, or the root run's agent), which
costs some twenty scans of the table on a large store. The join is done once,
when a run is classified, for that run's calls only; the fleet report then
reads this narrow table with plain ``GROUP BY`` scans; each call also keeps
its own time and own tokens (schema v4), for the latency and token tables.
The table is made by the store's schema (v3) and derived:
dropping it and clearing ``runs.classified_at`` rebuilds it.
"""

from __future__ import annotations

from typing import Final

import duckdb

from tracekit._util.sql import run_script

__all__ = ["sync_calls"]

# Runs being classified lose their old rows, and so do runs that are no
# longer roots; then they get their calls back with the caller resolved. (A
# call re-rooted by a late parent had its old root rebuilt by the ingest, so
# that root is either being classified again or gone.)
_SYNC: Final = """
DELETE FROM fleet_calls
WHERE root_run_id IN (SELECT run_id FROM _fleet_todo)
   OR root_run_id NOT IN (SELECT run_id FROM runs);

INSERT INTO fleet_calls BY NAME
SELECT i.root_run_id, i.invocation_id, coalesce(p.agent, r.agent, '?') AS caller, i.agent,
    i.service, i.start_at, i.status, i.duration_ms, i.own_ms, i.input_tokens, i.output_tokens
FROM invocations i
LEFT JOIN invocations p ON p.invocation_id = i.parent_invocation_id
LEFT JOIN runs r ON i.parent_invocation_id IS NULL AND r.run_id = i.parent_run_id
WHERE i.root_run_id IN (SELECT run_id FROM _fleet_todo)
"""


def sync_calls(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild the ``fleet_calls`` rows of the runs in the temp table ``_fleet_todo``."""
    run_script(con, _SYNC)
