"""The delegation tree: which agent called which, rebuilt from the records.

:func:`build_forest` rebuilds every run of a trace (each root run, orphans
whose parent is missing, invocations without a parent, cycles cut open) and
reports what was odd; :func:`agent_tree` returns one run's tree, as the seed
runtime's ``agentTree`` does; :func:`agents_in` flattens the invocations. The
step models live in :mod:`tracekit.tree.model`.

Records are folded in one pass over the ordered list, without recursion, so a
chain of any depth builds; the pass is a single tight loop because it runs
once per record of traces with millions of them.

Example:
    >>> from tracekit.events import Enter, Exit, Node
    >>> tree = agent_tree([
    ...     Node(ts=1, runId="r", id="decide"),
    ...     Enter(ts=2, invocationId="i", runId="c", parentRunId="r", agent="sql", node="delegate"),
    ...     Node(ts=3, runId="c", id="delegate/sql/say"),
    ...     Exit(ts=13, invocationId="i", runId="c", parentRunId="r", agent="sql", durationMs=11),
    ... ])
    >>> print(tree)
    decide
    delegate -> sql (ok, 11ms)
      say
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import attrgetter, eq, le
from typing import Any, Final

from tracekit._util.gcpause import gc_paused
from tracekit.events import Enter, Event, Exit, Node, RunEnd, RunStart, encode_event
from tracekit.tree.forest import AgentTree, Forest, Integrity, RunTree
from tracekit.tree.model import (
    MARK_NO_ENTER,
    AgentStep,
    NodeStep,
    Step,
    iter_steps,
)
from tracekit.tree.records import as_records

__all__ = ["agent_tree", "agents_in", "build_forest"]

_DEDUPE_SCAN: Final = 64  # past this many records in one millisecond, compare encodings
_TS: Final = attrgetter("ts")
_SEQ: Final = attrgetter("seq")
_STATUS: Final = attrgetter("status")


def agents_in(tree: Sequence[Step]) -> list[AgentStep]:
    """Every invocation of a tree once, in start order (the seed's ``agentsIn``).

    Example:
        >>> agents_in(AgentTree())
        []
    """
    found = [step for step in iter_steps([tree]) if type(step) is AgentStep]
    found.sort(key=_start_key)  # stable: ties keep the tree's order
    return found


def _start_key(step: AgentStep) -> float:
    return step.startTs if step.startTs is not None else float("-inf")


def agent_tree(events: Iterable[Event | dict[str, Any]], run_id: str | None = None) -> AgentTree:
    """Rebuild one run's delegation tree from its records, in any order.

    Args:
        events: v1 records, or dicts with the same keys as parsed from JSONL
            (as the seed's ``agentTree(events)`` takes them), mixed as you
            like (file order does not matter; ``ts`` orders them, ties by
            ``seq``, then by position).
        run_id: the run to return, a root or any child run. By default the
            first root run of the trace; :func:`build_forest` gives them all.

    Returns:
        The run's steps; empty if there is no such run.

    Raises:
        InvalidRecordError: a dict is not a valid record (its index and why).
        TypeError: an item is neither a record nor a dict.

    Example:
        >>> import json
        >>> lines = ['{"type":"node","ts":1,"runId":"r","id":"decide"}']
        >>> print(agent_tree([json.loads(line) for line in lines]))
        decide
    """
    forest = build_forest(events)
    if run_id is not None:
        found = forest.find(run_id)
        return found.steps if found is not None else AgentTree()
    return forest.runs[0].steps if forest.runs else AgentTree()


def build_forest(events: Iterable[Event | dict[str, Any]]) -> Forest:
    """Rebuild every tree of a trace and report what was odd about it.

    Root runs, orphans (invocations whose ``parentRunId`` is not in the
    trace), invocations without a parent and cycles in parent links each get
    a tree; nothing is dropped. An exit without an enter is placed at its
    start (``ts - durationMs``) and marked. Takes what :func:`agent_tree` takes.

    Example:
        >>> forest = build_forest([Node(ts=1, runId="a", id="x"), Node(ts=1, runId="b", id="y")])
        >>> [run.runId for run in forest.runs]
        ['a', 'b']
    """
    records = as_records(events)
    with gc_paused():
        return _build(records)


def _build(records: list[Event]) -> Forest:
    builder = _Builder()
    if not builder.fold(records):  # out of order: sort (stable) and fold again
        records = _ordered(records)
        builder = _Builder()
        builder.fold(records, check=False)
    if builder.early:  # exits whose enter never came: give each a start and fold again
        lone = {key: exit_ for key, exit_ in builder.early.items()}
        builder = _Builder(lone)
        builder.fold(_ordered(records + [_stand_in(e) for e in lone.values()]), check=False)
    return builder.finish()


def _ordered(events: list[Event]) -> list[Event]:
    """Sort by ``ts``, ties by ``seq`` then position; an ordered list is kept as is."""
    key: Any = _seq_key if any(map(_SEQ, events)) else _TS
    keys = list(map(key, events))
    if all(map(le, keys, keys[1:])):
        return events
    return sorted(events, key=key)  # stable: full ties keep file order


def _seq_key(event: Event) -> tuple[float, int]:
    return (event.ts, event.seq if event.seq is not None else -1)


def _seq_of(event: Event) -> int:
    """A tie's order: ``seq``, and -1 (first) where it has none, as :func:`_ordered` sorts."""
    return event.seq if event.seq is not None else -1


def _stand_in(exit_: Exit) -> Enter:
    """An enter standing in for one the trace lacks, at the exit's start time."""
    return Enter(
        ts=exit_.ts - (exit_.durationMs or 0.0),
        seq=exit_.seq,
        invocationId=exit_.invocationId,
        runId=exit_.runId,
        parentRunId=exit_.parentRunId,
        agent=exit_.agent,
        node=exit_.node,
    )


class _Builder:
    """Folds ordered records into per-run step lists."""

    def __init__(self, lone: dict[str, Exit] | None = None) -> None:
        self.items: dict[str | None, list[Step]] = {}
        # The runs whose step list was made for a step or a parent, not for a
        # new child: the only ones that can be roots (finish() looks at these,
        # not at every run of the trace).
        self.roots: dict[str | None, None] = {}
        self.owner: dict[str, AgentStep] = {}
        self.steps: dict[str, AgentStep] = {}
        self.early: dict[str, Exit] = {}
        self.starts: dict[str, RunStart] = {}
        self.ends: dict[str, RunEnd] = {}
        self.lone = lone or {}
        self.integrity = Integrity(exitsWithoutEnter=sorted(self.lone))
        self._keys: set[bytes] = set()
        self.maybe_cycles = False
        # Node steps are frozen values, so one object serves every repeat of a name.
        self._node_steps: dict[str, NodeStep] = {}

    def fold(self, events: list[Event], *, check: bool = True) -> bool:
        """One pass over the records; False (and a useless builder) if they are out of order.

        ``check=False`` folds a list already sorted by :func:`_ordered` to the end.

        Written as one loop with the common cases inline because it runs once
        per record of traces with millions of them; the odd cases (copies,
        conflicts, lone exits, shared runs) go to the methods below. The order
        check (``ts``, ties by ``seq``) rides along, so an ordered trace, the
        usual case, is neither sorted nor scanned twice. Records are the exact
        v1 classes (``type(event) is Node`` is the cheapest dispatch).
        """
        items, owner, by_id = self.items, self.owner, self.steps
        get = items.get
        shared, lone, early, roots = self._node_steps, self.lone, self.early, self.roots
        last_ts = -math.inf
        first: Event | None = None
        same: list[Event] | None = None
        for event in events:
            ts = event.ts
            if ts == last_ts and first is not None:
                if same is None or same[0] is not first:
                    same = [first]
                # same[-1] carries the highest seq of this millisecond so far
                # (a skipped copy equals an earlier record).
                if check and event.seq != same[-1].seq and _seq_of(event) < _seq_of(same[-1]):
                    return False
                if self._seen(event, same):
                    self.integrity.duplicates += 1
                    continue
            elif ts > last_ts or first is None:
                last_ts, first = ts, event
            elif check:  # out of order (or not a number): the caller sorts
                return False
            else:
                last_ts, first = ts, event
            if type(event) is Node:
                steps = get(event.runId)
                if steps is None:
                    steps = items[event.runId] = []
                    roots[event.runId] = None
                if event.ok is None and event.durationMs is None and event.call is None:
                    step = shared.get(event.id)
                    if step is None:
                        step = shared[event.id] = _node_step(event)
                    steps.append(step)
                else:
                    steps.append(_node_step(event))
            elif type(event) is Enter:
                key, child = event.invocationId, event.runId
                if key in by_id or child in owner or key in lone:
                    self._enter(event)
                    continue
                parent = event.parentRunId
                steps = get(child)
                if steps is None and child != parent:
                    steps = items[child] = []
                else:  # named before its enter: out of order, or a circle
                    steps = self._child_steps(event)
                agent = AgentStep(  # _started(), inline
                    agent=event.agent,
                    node=event.node,
                    kind=event.kind,
                    runId=child,
                    parentRunId=parent,
                    invocationId=key,
                    ok=None,
                    status="running",
                    durationMs=None,
                    startTs=ts,
                    edge=event.edge,
                    steps=steps,
                )
                owner[child] = by_id[key] = agent
                steps = get(parent)
                if steps is None:
                    steps = items[parent] = []
                    roots[parent] = None
                steps.append(agent)
                if early and key in early:
                    _finish(agent, early.pop(key))
            elif type(event) is Exit:
                done = by_id.get(event.invocationId)
                if done is None or done.endTs is not None or event.durationMs is None:
                    self._exit(event)
                    continue
                done.ok = event.ok
                done.status = event.status or "ok"
                done.error = event.error
                done.endTs = ts
                done.durationMs = event.durationMs
                done.usage = event.usage
            else:
                self._run_record(event)  # type: ignore[arg-type]
        return True

    def _child_steps(self, event: Enter) -> list[Step]:
        """The new child run's step list; one that exists already hints at a cycle."""
        steps = self.items.get(event.runId)
        if steps is None:
            steps = self.items[event.runId] = []
            if event.runId == event.parentRunId:
                self.maybe_cycles = True
        else:  # the run was named before its enter: out of order, or a circle
            self.maybe_cycles = True
        return steps

    def _seen(self, event: Event, same: list[Event]) -> bool:
        """Is this an exact copy of a record with the same ``ts``? (Copies sort together.)"""
        if len(same) < _DEDUPE_SCAN:
            if event in same:
                return True
            same.append(event)
            if len(same) == _DEDUPE_SCAN:  # a crowded millisecond: switch to a set
                self._keys = {encode_event(e) for e in same}
            return False
        key = encode_event(event)
        if key in self._keys:
            return True
        self._keys.add(key)
        same.append(event)
        return False

    def _list(self, run_id: str | None) -> list[Step]:
        found = self.items.get(run_id)
        if found is None:
            found = self.items[run_id] = []
            self.roots[run_id] = None
        return found

    def _enter(self, event: Enter) -> None:
        key = event.invocationId
        step = self.steps.get(key)
        if step is not None:
            if step.status == "pending":  # resumed after an approval: same call id
                step.status, step.ok, step.endTs = "running", None, None
            else:
                self.integrity.conflicts.append(key)  # exact copies were dropped already
            return
        shared = event.runId in self.owner
        step = _started(event, [] if shared else self._child_steps(event))
        if key in self.lone:
            step.mark = MARK_NO_ENTER
        if shared:  # two invocations claim one child run: its steps go to the first
            self.integrity.sharedRuns.append(event.runId)
            step.mark = f"run {event.runId} is shown under an earlier invocation"
        else:
            self.owner[event.runId] = step
        self.steps[key] = step
        self._list(event.parentRunId).append(step)
        if self.early:
            early = self.early.pop(key, None)
            if early is not None:
                _finish(step, early)

    def _exit(self, event: Exit) -> None:
        key = event.invocationId
        step = self.steps.get(key)
        if step is None:  # its enter sorts later (clock skew), or never comes
            if key in self.early:
                self.integrity.conflicts.append(key)
            else:
                self.early[key] = event
        elif step.endTs is not None and step.status != "pending":
            self.integrity.conflicts.append(key)  # a second, different exit: first kept
        else:
            _finish(step, event)

    def _run_record(self, event: RunStart | RunEnd) -> None:
        seen: dict[str, Any] = self.starts if type(event) is RunStart else self.ends
        if event.runId in seen:
            self.integrity.conflicts.append(event.runId)
            return
        seen[event.runId] = event
        self._list(event.runId)

    def finish(self) -> Forest:
        integrity = self.integrity
        running = map(eq, map(_STATUS, self.steps.values()), repeat("running"))
        integrity.entersWithoutExit = list(compress(self.steps, running))  # C loops: 250,000 steps
        runs = [self._tree(run_id) for run_id in self.roots if run_id not in self.owner]
        if self.maybe_cycles:
            runs.extend(self._cut_cycles())
        integrity.orphanRuns = [run.runId for run in runs if run.kind == "orphan" and run.runId]
        return Forest(runs=runs, integrity=integrity)

    def _tree(self, run_id: str | None) -> RunTree:
        steps = AgentTree(self.items[run_id])
        if run_id is None:
            return RunTree(runId=None, kind="parentless", steps=steps)
        if self._present(run_id):
            return _root(run_id, self.starts.get(run_id), self.ends.get(run_id), steps)
        return RunTree(runId=run_id, kind="orphan", steps=steps)

    def _present(self, run_id: str) -> bool:
        """Does the trace hold the run itself, not only invocations naming it as parent?"""
        if run_id in self.starts or run_id in self.ends:
            return True
        return any(type(step) is NodeStep for step in self.items[run_id])

    def _cut_cycles(self) -> list[RunTree]:
        """Find owned runs whose parent links never reach a root; open each circle once."""
        owner = self.owner
        done: set[str] = set()  # owned runs known to reach a root
        trees: list[RunTree] = []
        for start, step in list(owner.items()):
            parent = step.parentRunId
            if parent not in owner or parent in done:  # the usual case: one look
                continue
            path, on_path = [start], {start}
            run: str | None = parent
            while run is not None and run in owner and run not in done:
                if run in on_path:  # the path climbs parent links; a circle reads downwards
                    trees.append(self._open([run, *reversed(path[path.index(run) :])]))
                    break
                path.append(run)
                on_path.add(run)
                run = owner[run].parentRunId
            done.update(path)
        return trees

    def _open(self, circle: list[str]) -> RunTree:
        """Show a circle from its first run; the link that closes it is cut."""
        head = circle[0]
        closing = self.owner.pop(head)
        closing.steps = []
        closing.mark = "cycle: " + " -> ".join(circle)
        self.integrity.cycles.append(circle)
        tree = _root(head, self.starts.get(head), self.ends.get(head), AgentTree(self.items[head]))
        tree.kind = "cycle"
        tree.cycle = circle
        return tree


def _started(event: Enter, steps: list[Step]) -> AgentStep:
    """The step of an invocation that has entered and not (yet) exited."""
    return AgentStep(
        agent=event.agent,
        node=event.node,
        kind=event.kind,
        runId=event.runId,
        parentRunId=event.parentRunId,
        invocationId=event.invocationId,
        ok=None,
        status="running",
        durationMs=None,
        startTs=event.ts,
        edge=event.edge,
        steps=steps,
    )


def _node_step(event: Node) -> NodeStep:
    if event.call is None:
        return NodeStep(event.id.rpartition("/")[2], event.ok, event.durationMs)
    return NodeStep(
        event.id.rpartition("/")[2],
        event.ok,
        event.durationMs,
        call=event.call,
        error=event.error,
        usage=event.usage,
    )


def _finish(step: AgentStep, event: Exit) -> None:
    step.ok = event.ok
    step.status = event.status or "ok"
    step.error = event.error
    step.endTs = event.ts
    step.durationMs = event.durationMs
    step.usage = event.usage
    if step.durationMs is None and step.startTs is not None:
        step.durationMs = max(event.ts - step.startTs, 0.0)


def _root(run_id: str, start: RunStart | None, end: RunEnd | None, steps: AgentTree) -> RunTree:
    tree = RunTree(runId=run_id, kind="root", steps=steps)
    if start is not None:
        tree.agent, tree.service, tree.startTs = start.agent, start.service, start.ts
        tree.status = "running"
    if end is not None:
        tree.ok, tree.failure, tree.error = end.ok, end.failure, end.error
        tree.status = "ok" if end.ok else "error"
        tree.durationMs = end.durationMs
        if tree.durationMs is None and start is not None:
            tree.durationMs = max(end.ts - start.ts, 0.0)
    return tree
