"""Fleet failure classification: what each run is, and where its failure began.

:mod:`tracekit.failures.rules` holds the definition (small pure rules applied
in order); :func:`classify_store` applies them to a store's new runs;
:func:`classify_events` to the runs of a trace, without a store.
"""

from __future__ import annotations

from tracekit.failures.classify import ClassifyReport, classify_store
from tracekit.failures.facts import classify_events, run_facts
from tracekit.failures.rules import (
    OUTCOMES,
    RULES,
    Call,
    Finding,
    RunFacts,
    canonical_circle,
    classify_run,
    failing_origin,
    failure_role,
    failure_roles,
    incomplete_state,
)

__all__ = [
    "OUTCOMES",
    "RULES",
    "Call",
    "ClassifyReport",
    "Finding",
    "RunFacts",
    "canonical_circle",
    "classify_events",
    "classify_run",
    "classify_store",
    "failing_origin",
    "failure_role",
    "failure_roles",
    "incomplete_state",
    "run_facts",
]
