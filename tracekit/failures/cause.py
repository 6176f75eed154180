"""A root run's cause from its records: the store's classification, without a store.

``tracekit tree FILE`` says why a run ended as it did, as ``tracekit tree RUN
--db`` and the run page say it: the rules (:func:`~tracekit.failures.rules.classify_run`)
on the run's facts give its outcome, circle and origin; the origin's message
is the one the store picks (:func:`tracekit.store.cause.root_cause`): the
innermost error with the origin's code in the origin invocation's error
(else its own message, else the run's), or for a failed step under an agent
that went on, the first step of that name to fail in that agent's run.

Example:
    >>> from tracekit.events import ErrorInfo, RunEnd, RunStart
    >>> from tracekit.tree import build_forest
    >>> records = [RunStart(ts=0, runId="r", agent="desk"),
    ...            RunEnd(ts=5, runId="r", ok=False, error=ErrorInfo(code="Boom", message="no"))]
    >>> cause = run_causes(build_forest(records), records)["r"]
    >>> cause.outcome, cause.code, cause.message
    ('failed:child', 'Boom', 'no')
"""

from __future__ import annotations

from collections.abc import Sequence

from tracekit.events import Enter, ErrorInfo, Event, Exit
from tracekit.failures.facts import forest_facts
from tracekit.failures.model import Call, Finding, RunFacts
from tracekit.failures.rules import classify_run
from tracekit.tree import Forest
from tracekit.tree.outcome import RootCause, origin_message

__all__ = ["run_causes"]


def run_causes(forest: Forest, records: Sequence[Event]) -> dict[str, RootCause]:
    """Each root run of ``forest`` (built from ``records``): run id to its :class:`RootCause`.

    A run an invocation entered is a child run, as the store has it, even
    when the tree draws it on its own (the id of the invocation that entered
    it was kept for another): it has no cause of its own.
    """
    services = {run.runId: run.service for run in forest.runs if run.kind == "root"}
    entered = {r.runId for r in records if type(r) is Enter or type(r) is Exit}
    causes: dict[str, RootCause] = {}
    for facts in forest_facts(forest, records):
        if facts.run_id in entered:
            continue
        finding = classify_run(facts)
        causes[facts.run_id] = _cause(facts, finding, services.get(facts.run_id))
    return causes


def _cause(facts: RunFacts, finding: Finding, service: str | None) -> RootCause:
    origin = finding.origin
    if finding.origin_step is not None:
        message = _step_message(facts, finding.origin_step, origin)
    elif origin is not None and origin.error is not None:
        fallback = origin.error.message or _message(facts.error)
        message = origin_message(origin.error, finding.origin_code, fallback)
    else:
        message = _message(facts.error)
    return RootCause(
        run_id=facts.run_id,
        outcome=finding.outcome,
        circle=finding.circle,
        agent=finding.origin_agent,
        code=finding.origin_code,
        step=finding.origin_step,
        message=message,
        service=service,
        entry=facts.agent,
        depth=_depth(facts, origin),
    )


def _step_message(facts: RunFacts, step: str, origin: Call | None) -> str | None:
    """The message of the first step of that name to fail in the origin's run."""
    owner = origin.invocation_id if origin is not None else None
    failed = [
        s for s in facts.failed_steps if s.step == step and s.invocation_id == owner and s.error
    ]
    if not failed:
        return None
    first = min(failed, key=lambda s: float("inf") if s.ts_ms is None else s.ts_ms)
    return first.error.message if first.error is not None else None


def _message(error: ErrorInfo | None) -> str | None:
    return error.message or None if error is not None else None


def _depth(facts: RunFacts, origin: Call | None) -> int | None:
    """How deep the origin was called (1: by the root agent); None without one."""
    if origin is None:
        return None
    parents = {c.invocation_id: c.parent_invocation_id for c in (*facts.calls, *facts.sequence)}
    depth, at, seen = 1, origin.parent_invocation_id, set()
    while at is not None and at in parents and at not in seen:
        seen.add(at)
        depth, at = depth + 1, parents[at]
    return depth
