"""Own time and token totals of each invocation, filled into a built tree.

An invocation's **own time** is its duration less the time its child
invocations cover. Children may overlap each other (background subagents) or
run while the parent works, so the covered time is the length of the *union*
of their intervals, each clipped to the parent's own interval: a child that
outlives its parent covers only up to the parent's end, and a child still
running covers up to it too. Only direct children count (a grandchild runs
inside its own parent's interval, or, if it outlives it, while the
grandparent waits on nobody it called).

An invocation's **total usage** is its own (from its exit) plus the totals of
its children: the tokens of the whole subtree, and every model used in it.

Example:
    >>> own_time(0, 100, 100, [(10, 40), (30, 60), (90, 150)])
    40.0
    >>> add_usage(Usage(inputTokens=5, models=["m"]), Usage(inputTokens=2, outputTokens=1))
    Usage(inputTokens=7, outputTokens=1, models=['m'])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracekit.events import Usage
from tracekit.tree.model import AgentStep, Step

__all__ = ["add_usage", "covered_ms", "measure", "own_time"]


def covered_ms(start: float, end: float, intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of ``intervals`` clipped to ``[start, end]``.

    Example:
        >>> covered_ms(0, 10, [(2, 5), (4, 8), (20, 30)])
        6.0
    """
    clipped = sorted(
        (max(a, start), min(b, end)) for a, b in intervals if min(b, end) > max(a, start)
    )
    total = 0.0
    run_start = run_end = None
    for a, b in clipped:
        if run_end is None or a > run_end:
            if run_end is not None and run_start is not None:
                total += run_end - run_start
            run_start, run_end = a, b
        elif b > run_end:
            run_end = b
    if run_end is not None and run_start is not None:
        total += run_end - run_start
    return float(total)


def own_time(
    start: float | None,
    end: float | None,
    duration: float | None,
    children: Iterable[tuple[float | None, float | None]],
) -> float | None:
    """An invocation's duration less the time its children cover (union, clipped).

    A child without an end (still running) covers up to the parent's end.
    None while the invocation has no duration; never below 0 nor above
    ``duration``.

    Example:
        >>> own_time(0, 100, 100, [(20, None)])
        20.0
        >>> own_time(0, None, None, []) is None
        True
    """
    if duration is None:
        return None
    total = max(float(duration), 0.0)
    if start is None or end is None:
        return total
    spans = [(a, b if b is not None else end) for a, b in children if a is not None]
    return max(total - covered_ms(start, end, spans), 0.0)


def add_usage(first: Usage | None, second: Usage | None) -> Usage | None:
    """The sum of two usages: tokens added (None only if both are), models merged in order.

    Example:
        >>> add_usage(None, None) is None
        True
        >>> add_usage(Usage(models=["a", "b"]), Usage(models=["b", "c"])).models
        ['a', 'b', 'c']
    """
    if first is None or second is None:
        return first if second is None else second
    models = list(dict.fromkeys([*(first.models or ()), *(second.models or ())]))
    return Usage(
        inputTokens=_plus(first.inputTokens, second.inputTokens),
        outputTokens=_plus(first.outputTokens, second.outputTokens),
        models=models or None,
    )


def _plus(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return a if b is None else b
    return a + b


def measure(trees: Iterable[Sequence[Step]]) -> None:
    """Fill ``ownMs`` and ``totalUsage`` of every invocation of the trees, in place.

    Without recursion, so a chain of any depth is measured. Runs once per
    tree built, so the common case (a leaf: own time is all of it) is one
    test and two stores.

    Example:
        >>> child = AgentStep(agent="b", node=None, kind="delegate", runId="c", parentRunId="p",
        ...     invocationId="j", ok=True, status="ok", durationMs=4.0, startTs=2.0, endTs=6.0,
        ...     usage=Usage(inputTokens=3), steps=[])
        >>> top = AgentStep(agent="a", node=None, kind="delegate", runId="p", parentRunId="r",
        ...     invocationId="i", ok=True, status="ok", durationMs=10.0, startTs=0.0, endTs=10.0,
        ...     usage=Usage(inputTokens=1), steps=[child])
        >>> measure([[top]])
        >>> top.ownMs, top.totalUsage.inputTokens
        (6.0, 4)
    """
    for step, kids in reversed(_parents_first(trees)):
        duration = step.durationMs
        if not kids:
            step.ownMs = None if duration is None else max(duration, 0.0)
            step.totalUsage = step.usage
            continue
        step.ownMs = own_time(
            step.startTs, step.endTs, duration, [(c.startTs, c.endTs) for c in kids]
        )
        total = step.usage
        for child in kids:
            total = add_usage(total, child.totalUsage)
        step.totalUsage = total


def _parents_first(trees: Iterable[Sequence[Step]]) -> list[tuple[AgentStep, list[AgentStep]]]:
    """Every invocation with its child invocations, each after its parent."""
    found: list[tuple[AgentStep, list[AgentStep]]] = []
    stack = [s for tree in trees for s in tree if type(s) is AgentStep]
    while stack:
        step = stack.pop()
        kids = [s for s in step.steps if type(s) is AgentStep] if step.steps else []
        found.append((step, kids))
        stack.extend(kids)
    return found
