"""The invocation paths of a root agent's runs, counted: what ``--against-fleet`` compares.

An invocation's *path* is the agents from the root's call down to it. These
reads give a root run's agent, how many other runs that agent has, and each
path with the number of other runs it is seen in and whether the run has it.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     run_id = store.runs(limit=1)["run_id"][0]
    ...     (agent,) = root_agent(store, run_id)
    ...     paths = path_counts(store, agent, run_id)
    >>> all(isinstance(runs, int) for _, runs, _ in paths)
    True
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["other_runs", "path_counts", "root_agent"]

_MAX_DEPTH: Final = 1000  # a path stops here: a circle in the parent links cannot loop for ever

# Paths of every invocation of the root agent's runs, built down the parent
# links, then counted: in how many other runs each path is seen, and whether
# this run has it.
_PATHS: Final = f"""
WITH RECURSIVE mine AS (
    SELECT run_id FROM runs WHERE agent IS NOT DISTINCT FROM $agent
),
walk(invocation_id, root_run_id, path) AS (
    SELECT i.invocation_id, i.root_run_id, [i.agent]
    FROM invocations i JOIN mine m ON i.root_run_id = m.run_id
    WHERE i.parent_invocation_id IS NULL
    UNION ALL
    SELECT c.invocation_id, c.root_run_id, list_append(w.path, c.agent)
    FROM invocations c JOIN walk w ON c.parent_invocation_id = w.invocation_id
    WHERE len(w.path) < {_MAX_DEPTH}
)
SELECT path,
       count(DISTINCT root_run_id) FILTER (WHERE root_run_id <> $run) AS runs,
       bool_or(root_run_id = $run) AS mine
FROM walk GROUP BY path
"""


def root_agent(store: Any, run_id: str) -> tuple[str | None] | None:
    """The root run's agent as a one-value row, or None when ``run_id`` is no root run."""
    return store.con.execute("SELECT agent FROM runs WHERE run_id = ?", [run_id]).fetchone()


def other_runs(store: Any, agent: str | None, run_id: str) -> int:
    """How many root runs of ``agent`` the store holds besides ``run_id``."""
    row = store.con.execute(
        "SELECT count(*) FROM runs WHERE agent IS NOT DISTINCT FROM ? AND run_id <> ?",
        [agent, run_id],
    ).fetchone()
    return int(row[0]) if row else 0


def path_counts(store: Any, agent: str | None, run_id: str) -> list[tuple[Any, ...]]:
    """Each path of ``agent``'s runs: ``(path, other runs it is in, whether run_id has it)``."""
    return store.con.execute(_PATHS, {"agent": agent, "run": run_id}).fetchall()
