"""Classifying a store's unclassified runs: set-based where the answer is plain.

Most runs end ok with nothing failed inside (no invocation, no step), and a
run with no end is ``incomplete`` whatever is inside it: one ``UPDATE``
classifies those, as :data:`~tracekit.failures.rules.RULES` would
(``incomplete`` first; ``ok`` when no call failed or was cancelled and no step
failed). The rest, runs that ended badly or hold a failed or cancelled
invocation or a failed step, go through the pure rules
(:mod:`tracekit.store.hard`), then are written back in two set-based updates. A test checks the result
equals :func:`~tracekit.failures.rules.classify_run` on every run's full facts.
The same pass keeps ``fleet_calls`` (:mod:`tracekit.store.calls`) in step,
and ``loops`` (schema v10): one row a run and circle its agents went round,
the rules' :class:`~tracekit.failures.model.Loop` with its cost summed here
over the activations inside the circle (model calls, tokens, time). Only a
run that activates an agent twice (:func:`~tracekit.store.hard.revisited_runs`)
can go round one; it is settled by the rules unless counting its activations
shows it cannot have gone round often enough (:func:`~tracekit.store.hard.may_go_round`).

The rules are :mod:`tracekit.failures`'; the SQL that writes the store's
tables (``runs``' findings, ``invocations.failure_role``, ``fleet_calls``,
``loops``) is the store's own, here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import duckdb

from tracekit._util.sql import StoreOrConnection, connection, run_script
from tracekit.store.calls import sync_calls

__all__ = ["ClassifyReport", "classify_store"]


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
  AND root_run_id IN (SELECT run_id FROM _fleet_todo)
UNION
SELECT DISTINCT root_run_id FROM invocations
WHERE root_run_id IN (SELECT run_id FROM _fleet_todo)
  AND run_id IN (SELECT run_id FROM steps WHERE NOT ok)
UNION
SELECT DISTINCT run_id FROM steps WHERE NOT ok AND run_id IN (SELECT run_id FROM _fleet_todo);
"""

# The plain runs: no end (incomplete), or an ok end with nothing failed or
# cancelled inside, no step failed either (ok). The first and the last of
# RULES, set-based.
_PLAIN: Final = """
UPDATE runs SET
    outcome = CASE WHEN has_end THEN 'ok' ELSE 'incomplete' END,
    circle = NULL, origin_invocation_id = NULL, origin_agent = NULL, origin_code = NULL,
    origin_step = NULL, classified_at = $now
WHERE classified_at IS NULL AND run_id NOT IN (SELECT run_id FROM _fleet_hard)
"""

_WRITE_RUNS: Final = """
UPDATE runs SET
    outcome = f.outcome, circle = f.circle, origin_invocation_id = f.origin_invocation_id,
    origin_agent = f.origin_agent, origin_code = f.origin_code, origin_step = f.origin_step,
    classified_at = $now
FROM _fleet_findings f WHERE runs.run_id = f.run_id
"""

# A loop's cost is its activations': own tokens (the root agent's on its run),
# model calls (``llm`` steps of each activation's own run) and the time from
# the first one's start to the last one's end.
_WRITE_LOOPS: Final = """
DELETE FROM loops
WHERE run_id IN (SELECT run_id FROM _fleet_todo) OR run_id NOT IN (SELECT run_id FROM runs);

INSERT INTO loops BY NAME
WITH member AS (
    SELECT m.run_id, m.circle, coalesce(i.run_id, m.run_id) AS own_run,
        CASE WHEN m.invocation_id IS NULL THEN r.own_input_tokens ELSE i.input_tokens END
            AS input_tokens,
        CASE WHEN m.invocation_id IS NULL THEN r.own_output_tokens ELSE i.output_tokens END
            AS output_tokens,
        CASE WHEN m.invocation_id IS NULL THEN r.start_ms ELSE i.start_ms END AS start_ms,
        CASE WHEN m.invocation_id IS NULL THEN r.end_ms ELSE i.end_ms END AS end_ms
    FROM _fleet_loop_members m
    JOIN runs r ON r.run_id = m.run_id
    LEFT JOIN invocations i ON i.invocation_id = m.invocation_id
), llm AS (
    SELECT run_id, count(*) AS n FROM steps
    WHERE call = 'llm' AND run_id IN (SELECT own_run FROM member)
    GROUP BY run_id
), cost AS (
    SELECT m.run_id, m.circle, count(*) AS invocations, sum(coalesce(l.n, 0)) AS model_calls,
        sum(m.input_tokens) AS input_tokens, sum(m.output_tokens) AS output_tokens,
        max(m.end_ms) - min(m.start_ms) AS duration_ms
    FROM member m LEFT JOIN llm l ON l.run_id = m.own_run
    GROUP BY m.run_id, m.circle
)
SELECT l.run_id, l.circle, CAST(l.revisits AS INTEGER) AS revisits, l.stopped, l.limit_code,
    l.origin_agent, coalesce(c.invocations, 0) AS invocations, c.model_calls,
    c.input_tokens, c.output_tokens, c.duration_ms
FROM _fleet_loops l LEFT JOIN cost c USING (run_id, circle)
"""

_WRITE_ROLES: Final = """
UPDATE invocations SET failure_role = r.role
FROM _fleet_roles r WHERE invocations.invocation_id = r.invocation_id
"""


def classify_store(
    store: StoreOrConnection, *, own_transaction: bool = True, loop_min: int | None = None
) -> ClassifyReport:
    """Classify every run of a store whose ``classified_at`` is NULL (idempotent).

    Fills ``runs.outcome``, ``circle``, ``origin_invocation_id``,
    ``origin_agent``, ``origin_code``, ``origin_step`` and ``classified_at``, and
    ``invocations.failure_role`` of every failed invocation of those runs.

    Args:
        store: a :class:`tracekit.store.Store` opened for writing, or its connection.
        own_transaction: run in a transaction of its own; False inside the
            caller's (an ingest derives and classifies in one, so a store is
            never seen derived but unclassified).
        loop_min: how many times a run's agents go round a circle before a
            run that did not stop at it gets a ``finished`` loop row (None:
            :data:`~tracekit.failures.rules.LOOP_MIN`, 3).

    Returns:
        How many runs were classified, by outcome.

    Example:
        >>> from tracekit.store import Store
        >>> store = Store("fleet.duckdb")
        >>> classify_store(store)  # each ingest classified its own runs: none is left
        ClassifyReport(runs=0, outcomes={})
        >>> store.sql("SELECT outcome, count(*) AS runs FROM runs GROUP BY 1 ORDER BY 2 DESC, 1")
                    outcome  runs
        0                ok    34
        1          degraded     4
        2      failed:child     1
        3  failed:recursion     1
        >>> store.close()
    """
    con = connection(store)
    now = {"now": datetime.now(UTC).replace(tzinfo=None)}
    row = con.execute("SELECT count(*) FROM runs WHERE classified_at IS NULL").fetchone()
    if not row or not row[0]:
        return ClassifyReport()
    from tracekit.failures.rules import LOOP_MIN
    from tracekit.store.hard import classify_hard, may_go_round, revisited_runs  # only with work

    loop_min = LOOP_MIN if loop_min is None else loop_min
    if own_transaction:
        con.execute("BEGIN")
    try:
        run_script(con, _TODO)
        # A run that activates an agent twice goes to the rules only if its
        # sequence may go round a circle (the others are plain, settled below).
        revisited = (
            f"SELECT run_id FROM ({revisited_runs('SELECT run_id FROM _fleet_todo')})"
            " WHERE run_id NOT IN (SELECT run_id FROM _fleet_hard)"
        )
        con.execute(f"INSERT INTO _fleet_hard {may_go_round(revisited, loop_min)}")
        found = classify_hard(con, loop_min=loop_min)
        findings = found.findings
        counts = [(("ok" if has else "incomplete"), n) for has, n in _plain_counts(con)]
        run_script(con, _PLAIN, now)
        sync_calls(con)
        for name, table in zip(_REGISTERED, found, strict=True):
            con.register(name, table)
        con.execute(_WRITE_RUNS, now)
        con.execute(_WRITE_ROLES)
        run_script(con, _WRITE_LOOPS)
        if own_transaction:
            con.execute("COMMIT")
    except BaseException:
        if own_transaction:
            con.execute("ROLLBACK")
        raise
    finally:
        for name in _REGISTERED:
            con.unregister(name)
    outcomes: dict[str, int] = dict(counts)
    # Most runs first, as pandas' value_counts ordered them.
    for outcome, n in Counter(findings.column("outcome").to_pylist()).most_common():
        outcomes[str(outcome)] = outcomes.get(str(outcome), 0) + n
    return ClassifyReport(runs=sum(outcomes.values()), outcomes=outcomes)


#: The names :func:`classify_store` gives the rules' tables, in HardFindings' order.
_REGISTERED: Final = ("_fleet_findings", "_fleet_roles", "_fleet_loops", "_fleet_loop_members")


def _plain_counts(con: duckdb.DuckDBPyConnection) -> list[tuple[bool, int]]:
    return [
        (bool(has), int(n))
        for has, n in con.execute(
            "SELECT has_end, count(*) FROM runs WHERE classified_at IS NULL"
            " AND run_id NOT IN (SELECT run_id FROM _fleet_hard) GROUP BY ALL"
        ).fetchall()
    ]
