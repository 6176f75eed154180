"""The failure classification over a lake, on DuckDB or on Spark.

The same split as the store's (:func:`tracekit.store.classify.classify_store`): the
engine settles the plain runs set-based (no end: ``incomplete``; an ok end with
nothing failed or cancelled inside: ``ok``), counted where they lie; the runs
that ended badly or hold a failed or cancelled call or a failed step (a small
share of a fleet) are selected by the engine with only their failed and
cancelled calls and failed steps, and
those rows go through the pure rules (:func:`tracekit.store.hard.classify_hard`,
the very queries the store runs), which walk each run's failure down to its
origin and name its circle. So every engine gives the same classes, origins
and circles as the store, by construction and by test.

Example:
    >>> from tracekit.lake.engine import duckdb_lake
    >>> from tracekit.lake.export import export_lake
    >>> _ = export_lake("fleet.duckdb", "lake")
    >>> result = classify_lake(duckdb_lake("lake"))
    >>> result.outcomes["ok"] > 0, sorted(result.findings.columns)[:2]
    (True, ['circle', 'origin_agent'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import duckdb

from tracekit.store import classify_hard, revisited_runs
from tracekit.lake.engine import SparkLake

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LakeClassification", "classify_lake"]

# Every run of the lake is classified afresh (a lake has no classified_at to skip).
_HARD: Final = """
SELECT run_id FROM runs WHERE has_end AND NOT coalesce(ok, false)
UNION
SELECT DISTINCT root_run_id FROM invocations
WHERE status IN ('error', 'refused', 'cancelled') AND root_run_id IN (SELECT run_id FROM runs)
UNION
SELECT DISTINCT root_run_id FROM invocations
WHERE root_run_id IN (SELECT run_id FROM runs) AND run_id IN (SELECT run_id FROM steps WHERE NOT ok)
UNION
SELECT DISTINCT run_id FROM steps WHERE NOT ok AND run_id IN (SELECT run_id FROM runs)
UNION
""" + revisited_runs("SELECT run_id FROM runs")

_PLAIN: Final = """
SELECT CASE WHEN has_end THEN 'ok' ELSE 'incomplete' END AS outcome, count(*) AS runs
FROM runs WHERE run_id NOT IN (SELECT run_id FROM _fleet_hard) GROUP BY 1
"""


@dataclass(slots=True)
class LakeClassification:
    """A lake's runs, classified.

    Attributes:
        outcomes: runs of each outcome, every run of the lake counted.
        findings: one row a run that is not plainly ``ok`` or ``incomplete``:
            ``run_id``, ``outcome``, ``circle``, ``origin_invocation_id``,
            ``origin_agent``, ``origin_code``, ``origin_step`` (the plain runs
            have none of those).
        roles: ``invocation_id`` and ``role`` (``origin`` or ``wrapped``) of
            each failed invocation.
    """

    outcomes: dict[str, int]
    findings: pd.DataFrame
    roles: pd.DataFrame


def classify_lake(con: duckdb.DuckDBPyConnection | SparkLake) -> LakeClassification:
    """Classify every run of a lake opened on an engine (:func:`tracekit.lake.engine.open_lake`).

    Returns:
        The counts by outcome, the findings of the runs that failed or
        degraded (and of cancelled ones), and the failed invocations' roles.
    """
    if isinstance(con, SparkLake):
        con.view("_fleet_hard", _HARD)
    else:
        con.execute(f"CREATE OR REPLACE TEMP TABLE _fleet_hard AS {_HARD}")
    # The Spark engine answers execute/fetchall as a DuckDB connection does.
    found = classify_hard(cast(duckdb.DuckDBPyConnection, con))
    findings, roles = found.findings.to_pandas(), found.roles.to_pandas()
    outcomes: dict[str, Any] = {str(o): int(n) for o, n in con.execute(_PLAIN).fetchall()}
    for outcome, n in findings["outcome"].value_counts().items():
        outcomes[str(outcome)] = outcomes.get(str(outcome), 0) + int(n)
    findings = findings.sort_values("run_id", ignore_index=True)
    roles = roles.sort_values("invocation_id", ignore_index=True)
    return LakeClassification(outcomes=outcomes, findings=findings, roles=roles)
