"""The runs the set-based pass cannot settle, through the pure rules.

Runs that ended badly, hold a failed or cancelled invocation or a failed
step, or activate an agent twice (:func:`revisited_runs`: only those can go
round a circle) are in the temp table ``_fleet_hard``. They are read in a
few queries, only their failed and cancelled invocations and failed steps,
and every invocation of the runs that activate an agent twice (the sequence
their circles are read from), and classified by
:func:`~tracekit.failures.rules.classify_run`. Imported by
:func:`~tracekit.store.classify.classify_store` only when it has runs to
classify: a report on a classified store does not load the rules (and no step here
loads pandas).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, NamedTuple

import duckdb
import pyarrow as pa

from tracekit._util.arrow import strings
from tracekit.events import ErrorInfo, decode_error
from tracekit.failures.rules import (
    LOOP_MIN,
    Call,
    FailedStep,
    Finding,
    RunFacts,
    classify_run,
    failure_roles,
)

__all__ = ["HardFindings", "classify_hard", "may_go_round", "revisited_runs"]


def revisited_runs(runs: str) -> str:
    """SQL: the runs among ``runs`` (a query of run ids) that activate some agent twice.

    The root agent counts as an activation. Only such a run can go round a
    circle, so only these need every invocation read.

    Example:
        >>> "HAVING count(*) > 1" in revisited_runs("SELECT run_id FROM runs")
        True
    """
    return f"""
SELECT DISTINCT run_id FROM (
    SELECT root_run_id AS run_id, agent FROM invocations WHERE root_run_id IN ({runs})
    UNION ALL
    SELECT run_id, agent FROM runs WHERE agent IS NOT NULL AND run_id IN ({runs})
) GROUP BY run_id, agent HAVING count(*) > 1
"""


def may_go_round(runs: str, loop_min: int) -> str:
    """SQL: the runs among ``runs`` whose answer may hang on their sequence of activations.

    A run that ended ok, with no error on its end (a run among ``runs`` is
    not hard otherwise: nothing inside failed), is ``ok`` unless its agents
    went round a circle ``loop_min`` times (a ``finished`` loop). Going round
    r times shows every agent of the circle r times in the sequence
    (:mod:`tracekit.failures.sequence`), the one that closes it r + 1 times,
    and one of them activated twice. An agent shows once for each of its
    activations, and once more after each delegate that came back ok to an
    activation with several: counted so, a run in which no agent activated
    twice shows ``loop_min`` times, or none shows more, has no such loop and
    is settled by the set-based pass. A run with no end is ``incomplete``
    whatever its sequence. Any other (no root agent, an invocation id twice)
    goes to the rules.

    Example:
        >>> "appearances > 3" in may_go_round("SELECT run_id FROM runs", 3)
        True
    """
    m = max(loop_min, 1)
    return f"""
WITH r AS (SELECT run_id, agent, error_code FROM runs WHERE has_end AND run_id IN ({runs})),
inv AS (
    SELECT root_run_id AS run_id, invocation_id, parent_invocation_id, agent, status, kind
    FROM invocations WHERE root_run_id IN (SELECT run_id FROM r)
), kids AS (
    -- An invocation's parent is the run's root agent ('') unless it is one of the run's.
    SELECT i.run_id, coalesce(p.invocation_id, '') AS parent, count(*) AS n,
        count(*) FILTER (WHERE i.status = 'ok' AND i.kind <> 'handoff') AS back
    FROM inv i LEFT JOIN inv p ON p.run_id = i.run_id AND p.invocation_id = i.parent_invocation_id
    GROUP BY ALL
), acts AS (
    SELECT run_id, agent, invocation_id FROM inv
    UNION ALL SELECT run_id, agent, '' FROM r WHERE agent IS NOT NULL
), seen AS (
    SELECT a.run_id, a.agent, count(*) AS activations,
        sum(1 + CASE WHEN k.n > 1 THEN k.back ELSE 0 END) AS appearances
    FROM acts a LEFT JOIN kids k ON k.run_id = a.run_id AND k.parent = a.invocation_id
    GROUP BY ALL
)
(SELECT run_id FROM seen WHERE activations > 1 AND appearances >= {m}
 INTERSECT SELECT run_id FROM seen WHERE appearances > {m})
UNION SELECT run_id FROM r WHERE agent IS NULL OR error_code IS NOT NULL
UNION SELECT run_id FROM inv GROUP BY run_id, invocation_id HAVING count(*) > 1
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
    CAST(error AS VARCHAR) AS error, end_ms, start_ms, kind
FROM invocations
WHERE status IN ('error', 'refused', 'cancelled')
  AND root_run_id IN (SELECT run_id FROM _fleet_hard)
ORDER BY root_run_id, end_ms NULLS FIRST, invocation_id
"""

# Every invocation of the runs that may go round a circle: their sequence.
_SEQUENCE_CALLS: Final = f"""
SELECT root_run_id, invocation_id, parent_invocation_id, agent, status,
    CAST(error AS VARCHAR) AS error, end_ms, start_ms, kind
FROM invocations
WHERE root_run_id IN ({revisited_runs("SELECT run_id FROM _fleet_hard")})
ORDER BY root_run_id, start_ms NULLS FIRST, invocation_id
"""

# A step's run is its agent's: an invocation's run, or the root run itself.
# Only failed steps, and only the invocations of the runs to classify, are read.
_HARD_STEPS: Final = """
WITH failed AS (
    SELECT run_id, name, error_code, error_message, ts_ms FROM steps WHERE NOT ok
), owner AS (
    SELECT run_id, min(invocation_id) AS invocation_id, any_value(agent) AS agent,
        any_value(root_run_id) AS root_run_id
    FROM invocations
    WHERE root_run_id IN (SELECT run_id FROM _fleet_hard)
      AND run_id IN (SELECT run_id FROM failed)
    GROUP BY run_id
)
SELECT coalesce(o.root_run_id, f.run_id) AS root, f.name, o.invocation_id,
    coalesce(o.agent, r.agent) AS agent, f.error_code, f.error_message, f.ts_ms
FROM failed f
LEFT JOIN owner o ON o.run_id = f.run_id
LEFT JOIN runs r ON r.run_id = f.run_id
WHERE coalesce(o.root_run_id, f.run_id) IN (SELECT run_id FROM _fleet_hard)
"""


def _calls_by_run(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, list[Call]]:
    by_run: dict[str, list[Call]] = {}
    rows = con.execute(query).fetchall()
    for root, inv, parent, agent, status, error, end_ms, start_ms, kind in rows:
        call = Call(inv, parent, agent, status, decode_error(error), end_ms, start_ms, kind)
        by_run.setdefault(root, []).append(call)
    return by_run


def _steps_by_run(con: duckdb.DuckDBPyConnection) -> dict[str, list[FailedStep]]:
    by_run: dict[str, list[FailedStep]] = {}
    for root, name, inv, agent, code, message, ts in con.execute(_HARD_STEPS).fetchall():
        error = ErrorInfo(code=code, message=message or "") if code is not None else None
        by_run.setdefault(root, []).append(FailedStep(name, inv, agent, error, ts))
    return by_run


def _hard_facts(con: duckdb.DuckDBPyConnection) -> Iterator[RunFacts]:
    calls = _calls_by_run(con, _HARD_CALLS)
    sequences = _calls_by_run(con, _SEQUENCE_CALLS)
    steps = _steps_by_run(con)
    for run_id, agent, has_end, ok, error in con.execute(_HARD_RUNS).fetchall():
        yield RunFacts(
            run_id,
            agent,
            has_end,
            ok,
            decode_error(error),
            tuple(calls.get(run_id, ())),
            tuple(steps.get(run_id, ())),
            tuple(sequences.get(run_id, ())),
        )


class HardFindings(NamedTuple):
    """What :func:`classify_hard` found, as Arrow tables of strings.

    Attributes:
        findings: one row a run: ``run_id``, ``outcome``, ``circle``,
            ``origin_invocation_id``, ``origin_agent``, ``origin_code``, ``origin_step``.
        roles: ``invocation_id``, ``role`` of each failed invocation.
        loops: one row a run's loop: ``run_id``, ``circle``, ``revisits``,
            ``stopped``, ``limit_code``, ``origin_agent``.
        members: the activations inside each loop: ``run_id``, ``circle``,
            ``invocation_id`` (NULL: the root agent's own).
    """

    findings: pa.Table
    roles: pa.Table
    loops: pa.Table
    members: pa.Table


_FINDINGS: Final = [
    "run_id",
    "outcome",
    "circle",
    "origin_invocation_id",
    "origin_agent",
    "origin_code",
    "origin_step",
]
_LOOPS: Final = ["run_id", "circle", "revisits", "stopped", "limit_code", "origin_agent"]


def classify_hard(con: duckdb.DuckDBPyConnection, *, loop_min: int = LOOP_MIN) -> HardFindings:
    """Classify the runs of ``_fleet_hard``: findings, failure roles, loops and their members."""
    findings: list[tuple[Any, ...]] = []
    roles: list[tuple[str, str]] = []
    loops: list[tuple[Any, ...]] = []
    members: list[tuple[Any, ...]] = []
    for facts in _hard_facts(con):
        f = classify_run(facts, loop_min=loop_min)
        origin = f.origin.invocation_id if f.origin is not None else None
        where = (origin, f.origin_agent, f.origin_code, f.origin_step)
        findings.append((facts.run_id, f.outcome, f.circle, *where))
        roles.extend(failure_roles(facts.calls).items())
        _loop_rows(facts.run_id, f, loops, members)
    return HardFindings(
        _table(findings, _FINDINGS),
        _table(roles, ["invocation_id", "role"]),
        _table(loops, _LOOPS),
        _table(members, ["run_id", "circle", "invocation_id"]),
    )


def _loop_rows(
    run_id: str, finding: Finding, loops: list[tuple[Any, ...]], members: list[tuple[Any, ...]]
) -> None:
    loop = finding.loop
    if loop is None:
        return
    loops.append(
        (run_id, loop.circle, str(loop.revisits), loop.stopped, loop.limit_code, loop.origin_agent)
    )
    members.extend((run_id, loop.circle, member) for member in dict.fromkeys(loop.members))


def _table(rows: list[tuple[Any, ...]], columns: list[str]) -> pa.Table:
    """String columns from buffers (no pandas: ``pa.array`` would import it)."""
    values = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    return pa.Table.from_arrays([strings(list(v)) for v in values], names=columns)
