"""Runs and forests: a run's steps with its header, every run of a trace, and their JSON.

:class:`AgentTree` is one run's list of steps (:mod:`tracekit.tree.model`);
``str(tree)`` is its ``describeAgentTree`` text (:mod:`tracekit.tree.text`)
and Jupyter shows its HTML (:mod:`tracekit.tree.html`). A :class:`RunTree`
is a tree with what its header says; a :class:`Forest` is every tree of a
trace, with the :class:`Integrity` report of what was odd.

Example:
    >>> from tracekit.tree.model import NodeStep
    >>> run = RunTree(runId="r", kind="root", steps=AgentTree([NodeStep("a")]))
    >>> Forest(runs=[run], integrity=Integrity()).run("r").steps
    [NodeStep(id='a', ok=None, durationMs=None, call=None, error=None, usage=None)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, TypeAlias

import msgspec

from tracekit._util.text import escape
from tracekit.errors import RunNotFoundError
from tracekit.events import ErrorInfo
from tracekit.tree.html import tree_to_html
from tracekit.tree.measures import measure
from tracekit.tree.model import (
    MARK_NO_ENTER,
    AgentStep,
    Step,
    StepStatus,
    iter_steps,
    steps_to_json,
)
from tracekit.tree.text import describe_agent_tree

__all__ = [
    "AgentTree",
    "Forest",
    "Integrity",
    "RunKind",
    "RunTree",
    "forest_to_json",
    "owns_run",
]

RunKind: TypeAlias = Literal["root", "orphan", "cycle", "parentless", "subtree"]
_ENCODER: Final = msgspec.json.Encoder()
_LISTED: Final = 3  # run ids named when a run is not found


class AgentTree(list[Step]):
    """One run's steps; ``str(tree)`` is its :func:`describe_agent_tree` text."""

    def __str__(self) -> str:
        return describe_agent_tree(self)

    def _repr_html_(self) -> str:
        """Jupyter's rich view: the collapsible tree of :func:`tracekit.tree.html.tree_to_html`."""
        return tree_to_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain view (text/plain) is the describe text, as ``str``."""
        printer.text(str(self))


class RunTree(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One tree of a forest and what its header says.

    ``kind`` is ``root`` (a root run, inferred if it has no ``run.start``),
    ``orphan`` (invocations whose parent run is not in the trace; ``runId``
    is that missing run), ``cycle`` (runs whose parent links go round, shown
    from ``runId``; ``cycle`` lists the circle), ``parentless`` (invocations
    with no ``parentRunId``) or ``subtree`` (a child run asked for by id).
    """

    runId: str | None
    kind: RunKind
    agent: str | None = None
    service: str | None = None
    ok: bool | None = None
    status: StepStatus | None = None
    durationMs: float | None = None
    failure: str | None = None
    error: ErrorInfo | None = None
    startTs: float | None = None
    cycle: list[str] | None = None
    steps: AgentTree


class Integrity(msgspec.Struct, kw_only=True):
    """What was odd in a trace; nothing here was dropped or silently re-rooted.

    Attributes:
        orphanRuns: parent run ids that invocations name but the trace lacks.
        exitsWithoutEnter: invocation ids with an exit and no enter.
        entersWithoutExit: invocation ids still running (live or crashed).
        duplicates: records seen more than once, counted once.
        conflicts: ids given twice with different content (the first is kept).
        cycles: circles of run ids in parent links, each closed (``[a, b, a]``).
        sharedRuns: child run ids claimed by more than one invocation.
    """

    orphanRuns: list[str] = msgspec.field(default_factory=list)
    exitsWithoutEnter: list[str] = msgspec.field(default_factory=list)
    entersWithoutExit: list[str] = msgspec.field(default_factory=list)
    duplicates: int = 0
    conflicts: list[str] = msgspec.field(default_factory=list)
    cycles: list[list[str]] = msgspec.field(default_factory=list)
    sharedRuns: list[str] = msgspec.field(default_factory=list)

    @property
    def clean(self) -> bool:
        """True when nothing was odd (running invocations count as odd)."""
        return not (
            self.orphanRuns
            or self.exitsWithoutEnter
            or self.entersWithoutExit
            or self.duplicates
            or self.conflicts
            or self.cycles
            or self.sharedRuns
        )


class Forest(msgspec.Struct, kw_only=True):
    """Every tree of a trace, in order of first appearance, and the integrity report."""

    runs: list[RunTree]
    integrity: Integrity

    def find(self, run_id: str) -> RunTree | None:
        """Return the tree of ``run_id``: a root's, or a child run's subtree.

        Example:
            >>> from tracekit.tree.model import NodeStep
            >>> tree = AgentTree([NodeStep("a")])
            >>> forest = Forest(runs=[RunTree(runId="r", kind="root", steps=tree)], integrity=Integrity())
            >>> forest.find("r").steps
            [NodeStep(id='a', ok=None, durationMs=None, call=None, error=None, usage=None)]
        """
        for run in self.runs:
            if run.runId == run_id and run.kind != "orphan":
                return run
        for step in iter_steps(run.steps for run in self.runs):
            if isinstance(step, AgentStep) and step.runId == run_id and owns_run(step):
                return _subtree(step)
        # A run never started but named as a parent: the store lists it as a run,
        # so its tree is the invocations that name it.
        return next((run for run in self.runs if run.runId == run_id), None)

    def run(self, run_id: str, *, source: str = "the trace") -> RunTree:
        """Like :meth:`find`, but a missing run is an error that lists the runs there.

        Raises:
            RunNotFoundError: ``run_id`` is neither a run nor a child run of the forest.
        """
        found = self.find(run_id)
        if found is None:
            known = [r.runId for r in self.runs if r.runId and r.kind != "orphan"]
            shown = ", ".join(escape(str(k)) for k in known[:_LISTED])
            more = len(known) - _LISTED
            shown += f" and {more} more" if more > 0 else ""
            raise RunNotFoundError(
                f"run {escape(run_id)} is not in {source}",
                run_id=run_id,
                source=source,
                hint=f"Runs in it: {shown}." if known else "",
            )
        return found


def owns_run(step: AgentStep) -> bool:
    """False for a cycle's cut link or a second claim on a run: their steps are elsewhere."""
    return step.mark is None or step.mark == MARK_NO_ENTER


def _subtree(step: AgentStep) -> RunTree:
    return RunTree(
        runId=step.runId,
        kind="subtree",
        agent=step.agent,
        ok=step.ok,
        status=step.status,
        durationMs=step.durationMs,
        error=step.error,
        startTs=step.startTs,
        steps=AgentTree(step.steps),
    )


def forest_to_json(forest: Forest, runs: Sequence[RunTree] | None = None) -> bytes:
    """Encode a forest (or some of its runs) as ``{"runs": [...], "integrity": {...}}``.

    Each invocation's ``ownMs`` and ``totalUsage`` are measured first
    (:func:`tracekit.tree.measures.measure`).

    Example:
        >>> from tracekit.tree.model import NodeStep
        >>> run = RunTree(runId="r", kind="root", steps=AgentTree([NodeStep("a")]))
        >>> forest_to_json(Forest(runs=[run], integrity=Integrity()))[:73]
        b'{"runs":[{"runId":"r","kind":"root","steps":[{"type":"node","id":"a"}]}],'
    """
    chosen = forest.runs if runs is None else runs
    measure(run.steps for run in chosen)  # own time and totals: only what is written
    parts = []
    for run in chosen:
        head = _ENCODER.encode(msgspec.structs.replace(run, steps=AgentTree()))
        parts.append(head[: -len(b"[]}")] + steps_to_json(run.steps) + b"}")
    integrity = _ENCODER.encode(forest.integrity)
    return b'{"runs":[' + b",".join(parts) + b'],"integrity":' + integrity + b"}"
