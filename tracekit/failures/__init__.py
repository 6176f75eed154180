"""Fleet failure classification: what each run is, and where its failure began.

:mod:`tracekit.failures.rules` holds the definition (small pure rules applied
in order); :func:`classify_events` applies them to the runs of a trace,
without a store; :mod:`tracekit.store.hard` to the rows of a store or a
lake's failed runs (the store's writer, :func:`tracekit.store.classify.classify_store`,
writes the findings back). Names load
on first use: a report on a classified store needs ``classify_store``'s
check alone, not the rules, the event model or the tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from tracekit._util.lazy import lazy_names as _lazy_names
from tracekit.failures.outcomes import OUTCOMES

if _TYPE_CHECKING:
    from tracekit.failures.facts import classify_events, run_facts
    from tracekit.failures.limits import is_limit
    from tracekit.failures.rules import (
        LOOP_MIN,
        RULES,
        Call,
        FailedStep,
        Finding,
        Loop,
        RunFacts,
        canonical_circle,
        classify_run,
        failing_origin,
        failure_role,
        failure_roles,
        incomplete_state,
    )

_LAZY: dict[str, str] = {
    "classify_events": "tracekit.failures.facts",
    "run_facts": "tracekit.failures.facts",
    "is_limit": "tracekit.failures.limits",
    **dict.fromkeys(
        (
            "LOOP_MIN",
            "RULES",
            "Call",
            "FailedStep",
            "Finding",
            "Loop",
            "RunFacts",
            "canonical_circle",
            "classify_run",
            "failing_origin",
            "failure_role",
            "failure_roles",
            "incomplete_state",
        ),
        "tracekit.failures.rules",
    ),
}


__getattr__ = _lazy_names(__name__, _LAZY)


__all__ = [
    "LOOP_MIN",
    "OUTCOMES",
    "RULES",
    "Call",
    "FailedStep",
    "Finding",
    "Loop",
    "RunFacts",
    "canonical_circle",
    "classify_events",
    "classify_run",
    "failing_origin",
    "failure_role",
    "failure_roles",
    "incomplete_state",
    "is_limit",
    "run_facts",
]
