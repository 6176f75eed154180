"""Classifying a store's unclassified runs: set-based where the answer is plain.

Most runs end ok with nothing failed inside, and a run with no end is
``incomplete`` whatever is inside it: one ``UPDATE`` classifies those, as
:data:`~tracekit.failures.rules.RULES` would (``incomplete`` first; ``ok``
when no call failed or was cancelled). The rest, runs that ended badly or
hold a failed or cancelled invocation, are read in one query (only those
invocations: the rules look at no others) and go through the pure rules,
then are written back in two set-based updates. A test checks the result
equals :func:`~tracekit.failures.rules.classify_run` on every run's full facts.
The same pass keeps ``fleet_calls`` (:mod:`tracekit.failures.calls`) in step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

import duckdb
import msgspec

from tracekit.events import ErrorInfo
from tracekit.failures.calls import sync_calls
from tracekit.failures.rules import Call, RunFacts, classify_run, failure_roles

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ClassifyReport", "classify_store"]


class _HasCon(Protocol):
    con: duckdb.DuckDBPyConnection


@dataclass(slots=True)
class ClassifyReport:
    """What :func:`classify_store` did: runs classified, by outcome."""

    runs: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


_TODO: Final = """
CREATE OR REPLACE TEMP TABLE _fleet_todo AS
SELECT run_id FROM runs WHERE classified_at IS NULL;

CREATE OR REPLACE TEMP TABLE _fleet_hard AS
SELECT run_id FROM runs
WHERE classified_at IS NULL AND has_end AND NOT coalesce(ok, false)
UNION
SELECT DISTINCT root_run_id FROM invocations
WHERE status IN ('error', 'refused', 'cancelled')
  AND root_run_id IN (SELECT run_id FROM _fleet_todo);
"""

# The plain runs: no end (incomplete), or an ok end with nothing failed or
# cancelled inside (ok). Rules 1 and 7 of RULES, set-based.
_PLAIN: Final = """
UPDATE runs SET
    outcome = CASE WHEN has_end THEN 'ok' ELSE 'incomplete' END,
    circle = NULL, origin_invocation_id = NULL, origin_agent = NULL, origin_code = NULL,
    classified_at = $now
WHERE classified_at IS NULL AND run_id NOT IN (SELECT run_id FROM _fleet_hard)
"""

_HARD_RUNS: Final = """
SELECT r.run_id, r.agent, r.has_end, r.ok, e.error
FROM runs r JOIN _fleet_hard h USING (run_id)
LEFT JOIN (
    SELECT run_id, any_value(json_extract_string(raw, '$.error')) AS error
    FROM events WHERE type = 'run.end' AND run_id IN (SELECT run_id FROM _fleet_hard)
    GROUP BY run_id
) e USING (run_id)
"""

_HARD_CALLS: Final = """
SELECT root_run_id, invocation_id, parent_invocation_id, agent, status,
    CAST(error AS VARCHAR) AS error, end_ms
FROM invocations
WHERE status IN ('error', 'refused', 'cancelled')
  AND root_run_id IN (SELECT run_id FROM _fleet_hard)
ORDER BY root_run_id, end_ms NULLS FIRST, invocation_id
"""

_WRITE_RUNS: Final = """
UPDATE runs SET
    outcome = f.outcome, circle = f.circle, origin_invocation_id = f.origin_invocation_id,
    origin_agent = f.origin_agent, origin_code = f.origin_code, classified_at = $now
FROM _fleet_findings f WHERE runs.run_id = f.run_id
"""

_WRITE_ROLES: Final = """
UPDATE invocations SET failure_role = r.role
FROM _fleet_roles r WHERE invocations.invocation_id = r.invocation_id
"""

_ERROR: Final = msgspec.json.Decoder(ErrorInfo | None)


def _error(text: str | None) -> ErrorInfo | None:
    if not text:
        return None
    try:
        return _ERROR.decode(text)
    except msgspec.DecodeError:  # not an error object: the code alone is all we know
        return None


def _script(con: duckdb.DuckDBPyConnection, script: str, params: dict[str, Any] | None) -> None:
    for statement in (s.strip() for s in script.split(";\n")):
        if statement:
            con.execute(statement, params if params and "$" in statement else None)


def _calls_by_run(con: duckdb.DuckDBPyConnection) -> dict[str, list[Call]]:
    by_run: dict[str, list[Call]] = {}
    rows = con.execute(_HARD_CALLS).fetchall()
    for root, inv, parent, agent, status, error, end_ms in rows:
        by_run.setdefault(root, []).append(Call(inv, parent, agent, status, _error(error), end_ms))
    return by_run


def _hard_facts(con: duckdb.DuckDBPyConnection) -> Iterator[RunFacts]:
    calls = _calls_by_run(con)
    for run_id, agent, has_end, ok, error in con.execute(_HARD_RUNS).fetchall():
        yield RunFacts(run_id, agent, has_end, ok, _error(error), tuple(calls.get(run_id, ())))


def _classify_hard(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, pd.DataFrame]:
    import pandas as pd  # only when there is work: a report on a classified store skips it

    findings: list[tuple[Any, ...]] = []
    roles: list[tuple[str, str]] = []
    for facts in _hard_facts(con):
        f = classify_run(facts)
        origin = f.origin.invocation_id if f.origin is not None else None
        findings.append((facts.run_id, f.outcome, f.circle, origin, f.origin_agent, f.origin_code))
        roles.extend(failure_roles(facts.calls).items())
    columns = ["run_id", "outcome", "circle", "origin_invocation_id", "origin_agent", "origin_code"]
    return (
        pd.DataFrame(findings, columns=columns, dtype=object),
        pd.DataFrame(roles, columns=["invocation_id", "role"], dtype=object),
    )


def classify_store(store: _HasCon | duckdb.DuckDBPyConnection) -> ClassifyReport:
    """Classify every run of a store whose ``classified_at`` is NULL (idempotent).

    Fills ``runs.outcome``, ``circle``, ``origin_invocation_id``,
    ``origin_agent``, ``origin_code`` and ``classified_at``, and
    ``invocations.failure_role`` of every failed invocation of those runs.

    Args:
        store: a :class:`tracekit.store.Store` opened for writing, or its connection.

    Returns:
        How many runs were classified, by outcome.

    Example:
        >>> classify_store(Store("fleet.duckdb")).outcomes  # doctest: +SKIP
        {'ok': 1563, 'degraded': 170, 'failed:child': 122, ...}
    """
    con = store if isinstance(store, duckdb.DuckDBPyConnection) else store.con
    now = {"now": datetime.now(UTC).replace(tzinfo=None)}
    row = con.execute("SELECT count(*) FROM runs WHERE classified_at IS NULL").fetchone()
    if not row or not row[0]:
        return ClassifyReport()
    con.execute("BEGIN")
    try:
        _script(con, _TODO, None)
        findings, roles = _classify_hard(con)
        counts = [(("ok" if has else "incomplete"), n) for has, n in _plain_counts(con)]
        _script(con, _PLAIN, now)
        sync_calls(con)
        con.register("_fleet_findings", findings)
        con.register("_fleet_roles", roles)
        con.execute(_WRITE_RUNS, now)
        con.execute(_WRITE_ROLES)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        for name in ("_fleet_findings", "_fleet_roles"):
            con.unregister(name)
    outcomes: dict[str, int] = dict(counts)
    for outcome, n in findings["outcome"].value_counts().items():
        outcomes[str(outcome)] = outcomes.get(str(outcome), 0) + int(n)
    return ClassifyReport(runs=sum(outcomes.values()), outcomes=outcomes)


def _plain_counts(con: duckdb.DuckDBPyConnection) -> list[tuple[bool, int]]:
    return [
        (bool(has), int(n))
        for has, n in con.execute(
            "SELECT has_end, count(*) FROM runs WHERE classified_at IS NULL"
            " AND run_id NOT IN (SELECT run_id FROM _fleet_hard) GROUP BY ALL"
        ).fetchall()
    ]
