"""Building the rules' input (:class:`RunFacts`) from trace records, without a store.

Example:
    >>> from tracekit.events import RunEnd, RunStart
    >>> [facts] = run_facts([RunStart(ts=0, runId="r", agent="desk"), RunEnd(ts=5, runId="r", ok=True)])
    >>> facts.run_id, facts.has_end, facts.ok
    ('r', True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from tracekit.events import Event, Node
from tracekit.failures.rules import Call, FailedStep, Finding, RunFacts, classify_run
from tracekit.tree import AgentStep, Forest, RunTree, Step, build_forest
from tracekit.tree.records import as_records

__all__ = ["classify_events", "forest_facts", "run_facts"]


def _calls(steps: Sequence[Step], parent: str | None) -> Iterator[Call]:
    stack = [(step, parent) for step in reversed(steps)]
    while stack:
        step, above = stack.pop()
        if not isinstance(step, AgentStep):
            continue
        yield Call(
            invocation_id=step.invocationId,
            parent_invocation_id=above,
            agent=step.agent,
            status=step.status,
            error=step.error,
            end_ms=step.endTs,
            start_ms=step.startTs,
            kind=step.kind,
        )
        stack.extend((inner, step.invocationId) for inner in reversed(step.steps))


def _failed_steps(run: RunTree, failed: dict[str, list[Node]]) -> Iterator[FailedStep]:
    """The failed ``node`` records of the run itself and of its invocations' runs."""
    owners: list[tuple[str, str | None, str | None]] = [(run.runId or "", None, run.agent)]
    owners += [(s.runId, s.invocationId, s.agent) for s in _agent_steps(run.steps)]
    seen: set[str] = set()
    for run_id, invocation, agent in owners:
        if run_id in seen:
            continue
        seen.add(run_id)
        for node in failed.get(run_id, ()):
            yield FailedStep(node.id.rsplit("/", 1)[-1], invocation, agent, node.error, node.ts)


def _agent_steps(steps: Sequence[Step]) -> Iterator[AgentStep]:
    stack = list(reversed(steps))
    while stack:
        step = stack.pop()
        if isinstance(step, AgentStep):
            yield step
            stack.extend(reversed(step.steps))


def _facts(run: RunTree, failed: dict[str, list[Node]]) -> RunFacts:
    calls = tuple(_calls(run.steps, None))
    return RunFacts(
        run_id=run.runId or "",
        agent=run.agent,
        has_end=run.ok is not None,
        ok=run.ok,
        error=run.error,
        calls=calls,
        failed_steps=tuple(_failed_steps(run, failed)) if failed else (),
        sequence=calls,
    )


def run_facts(events: Iterable[Event]) -> list[RunFacts]:
    """The facts of every root run of a trace (orphans and cycles are not root runs)."""
    records = as_records(events)
    return forest_facts(build_forest(records), records)


def forest_facts(forest: Forest, records: Iterable[Event]) -> list[RunFacts]:
    """The facts of every root run of a forest already built from ``records``.

    Example:
        >>> from tracekit.events import RunEnd, RunStart
        >>> records = [RunStart(ts=0, runId="r", agent="desk"), RunEnd(ts=5, runId="r", ok=True)]
        >>> [facts.run_id for facts in forest_facts(build_forest(records), records)]
        ['r']
    """
    failed: dict[str, list[Node]] = {}
    for event in records:
        if type(event) is Node and event.ok is False:
            failed.setdefault(event.runId, []).append(event)
    return [_facts(run, failed) for run in forest.runs if run.kind == "root"]


def classify_events(events: Iterable[Event]) -> dict[str, Finding]:
    """Classify every root run of a trace: run id to :class:`Finding`.

    Example:
        >>> from tracekit.events import RunStart
        >>> classify_events([RunStart(ts=0, runId="r", agent="desk")])["r"].outcome
        'incomplete'
    """
    return {facts.run_id: classify_run(facts) for facts in run_facts(events)}
