"""Why a run ended as it did: its outcome, its circle, and where its failure began.

The run page, ``tracekit tree RUN --db`` and the server's API read the same
row: the classification of a root run (:mod:`tracekit.failures`) with the
message of its origin (the failed invocation's, or for a degraded run the
failed step's that began it).
:func:`~tracekit.tree.outcome.describe_cause` says it, as it says a trace
file's (:func:`tracekit.failures.cause.run_causes`).

Example:
    >>> cause = RootCause("r1", "failed:recursion", "critic -> planner -> critic",
    ...     "planner", "LoopDetected", None, "delegation loop", "desk", "planner", 2)
    >>> print("\\n".join(describe_cause(cause)))
    outcome failed:recursion: circle critic -> planner -> critic (wrong by construction: it will happen again)
    refused in agent planner at depth 2 (LoopDetected): "delegation loop"
"""

from __future__ import annotations

from typing import Final

import duckdb

from tracekit.events import decode_error
from tracekit.tree.outcome import RootCause, describe_cause, origin_message

__all__ = ["RootCause", "describe_cause", "root_cause"]

# The message of a failed step that began a degraded run: the first of that
# name to fail in its agent's run (the origin invocation's, or the root run's).
_ROOT_CAUSE: Final = """
SELECT r.run_id, r.outcome, r.circle, r.origin_agent, r.origin_code, r.origin_step,
    CASE WHEN r.origin_step IS NULL THEN coalesce(nullif(i.error_message, ''), nullif(r.error_message, '')) ELSE (
        SELECT s.error_message FROM steps s
        WHERE s.run_id = coalesce(i.run_id, r.run_id) AND s.name = r.origin_step AND NOT s.ok
        ORDER BY s.ts_ms LIMIT 1
    ) END,
    r.service, r.agent, i.depth, i.error
FROM runs r LEFT JOIN invocations i ON i.invocation_id = r.origin_invocation_id
WHERE r.run_id = ?
"""


def root_cause(con: duckdb.DuckDBPyConnection, run_id: str) -> RootCause | None:
    """The root cause of root run ``run_id``, or None for a child run (or no such run)."""
    row = con.execute(_ROOT_CAUSE, [run_id]).fetchone()
    if row is None:
        return None
    *fields, error = row
    cause = RootCause(*fields)
    if cause.step is None and error is not None:  # the message of the code it began with
        message = origin_message(decode_error(error), cause.code, cause.message)
        cause = cause._replace(message=message)
    return cause
