"""Circles from the sequence of a run's activations, not only from its failing path.

Real frameworks loop by passing control on: agents hand off and finish, or
a manager delegates to the same agents turn after turn, and each activation
hangs under the one that passed it control (the tree's handoff and
delegation edges, a graph's steps, across traces by span links). The run's
sequence of activations (:func:`activation_sequence`) is that tree walked in
start order, whatever each one's status: an activation, then what it
passed control to. A caller that delegated gets control back when its
delegate returns ok: between two of its delegates, and after the last when
it had several, it is in the sequence again (its next turn). A handoff
never comes back: the handing agent is done.

Where the sequence goes round the same agents again, the repeated stretch
is a :class:`Cycle` (:func:`sequence_cycle`): its circle (written
canonically), how many times it went round, and its members (from the
first entry of the cycle to the end of the last), over which the loop's
cost is summed. A stretch in which no agent was activated twice (only a
caller coming back between different delegates) is no circle.

Example:
    >>> path = ["LangGraph", "triage", "billing", "triage", "billing", "triage"]
    >>> cycle = path_cycle(path)
    >>> cycle.circle, cycle.revisits, (cycle.first, cycle.last)
    ('billing -> triage -> billing', 2, (1, 5))
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tracekit.events import canonical_circle
from tracekit.failures.model import Call, RunFacts

__all__ = ["Cycle", "activation_sequence", "path_cycle", "sequence_cycle"]

Activation = tuple[str, "str | None"]  # (agent, invocation id; None for the root agent's own)


@dataclass(frozen=True, slots=True)
class Cycle:
    """A stretch of a sequence of agents that repeats a circle.

    Attributes:
        circle: the canonical circle (``a -> b -> a``).
        revisits: how many times the sequence went round it (1: closed once).
        first: the index in the sequence of the cycle's first entry.
        last: the index of its last activation.
    """

    circle: str
    revisits: int
    first: int
    last: int


def path_cycle(path: Sequence[str]) -> Cycle | None:
    """The circle a sequence of agents goes round, stretched back as far as it repeats.

    The last agent of the sequence seen earlier in it (else the latest such
    one) closes a circle; of the circles it closes (one per earlier
    occurrence), the one the sequence goes round the most times is taken,
    then the one it repeats the longest, then the shortest.

    Example:
        >>> path_cycle(["desk", "a", "b", "c", "a", "b", "c", "a"]).circle
        'a -> b -> c -> a'
        >>> path_cycle(["t", "b", "t", "r", "t", "b", "t", "r", "t"]).circle
        'b -> t -> r -> t -> b'
        >>> path_cycle(["desk", "a", "b"]) is None, path_cycle(["a", "b", "a"]).revisits
        (True, 1)
    """
    seen: dict[str, list[int]] = {}
    end = -1
    for at, name in enumerate(path):
        if name in seen:
            end = at
        seen.setdefault(name, []).append(at)
    if end < 0:
        return None
    best: tuple[int, int, int, int] | None = None  # (revisits, covered, -span, first)
    for start in seen[path[end]]:
        if start >= end:
            break
        span = end - start
        first = start
        while first > 0 and path[first - 1] == path[first - 1 + span]:
            first -= 1
        found = ((end - first) // span, end - first, -span, first)
        if best is None or found[:3] > best[:3]:
            best = found
    assert best is not None  # path[end] was seen before end
    revisits, span, first = best[0], -best[2], best[3]
    return Cycle(canonical_circle(path[end - span : end + 1]), revisits, first, end)


def activation_sequence(run: RunFacts) -> list[Activation]:
    """The run's activations in the order control passed, each ``(agent, invocation id)``.

    Example:
        >>> calls = [Call(f"i{n}", None, "billing", "ok", start_ms=n, kind="delegate")
        ...          for n in range(2)]
        >>> [a for a, _ in activation_sequence(RunFacts("r", "triage", True, True, sequence=tuple(calls)))]
        ['triage', 'billing', 'triage', 'billing', 'triage']
    """
    ids = {c.invocation_id for c in run.sequence}
    below: dict[str | None, list[Call]] = {}
    for call in run.sequence:
        parent = call.parent_invocation_id if call.parent_invocation_id in ids else None
        below.setdefault(parent, []).append(call)
    for calls in below.values():
        calls.sort(key=lambda c: (_at(c), c.invocation_id))
    if run.agent is None:
        return [a for top in below.get(None, ()) for a in _walk(top.agent, top, below)]
    return list(_walk(run.agent, None, below))


def _walk(
    agent: str, call: Call | None, below: dict[str | None, list[Call]]
) -> Iterator[Activation]:
    """An activation and what it passed control to, depth first, without recursion."""
    stack: list[tuple[str, Call | None, int]] = [(agent, call, 0)]
    while stack:
        name, at, n = stack.pop()
        key = at.invocation_id if at is not None else None
        kids = below.get(key, ())
        if n == 0:
            yield name, key
        elif _returned(kids[n - 1]) and (n < len(kids) or len(kids) > 1):
            yield name, key  # its delegate came back: its next turn
        if n < len(kids):
            stack.append((name, at, n + 1))
            stack.append((kids[n].agent, kids[n], 0))


def _returned(call: Call) -> bool:
    """Control came back to the caller: a delegate (not a handoff) that ended ok."""
    return call.kind != "handoff" and call.status == "ok"


def _at(call: Call) -> float:
    return float("-inf") if call.start_ms is None else call.start_ms


def sequence_cycle(run: RunFacts) -> tuple[Cycle, list[Activation]] | None:
    """The cycle the run's sequence of activations goes round, with that sequence (None: none).

    A stretch in which no agent was activated twice (a caller only coming
    back between different delegates) is no circle.

    Example:
        >>> calls = [Call(f"i{n}", f"i{n - 1}" if n else None, a, "ok", start_ms=n, kind="handoff")
        ...          for n, a in enumerate(["triage", "billing", "triage"])]
        >>> cycle, path = sequence_cycle(RunFacts("r", "LangGraph", True, True, sequence=tuple(calls)))
        >>> cycle.circle, [i for _, i in path[cycle.first : cycle.last + 1]]
        ('billing -> triage -> billing', ['i0', 'i1', 'i2'])
    """
    if not run.sequence:
        return None
    path = activation_sequence(run)
    cycle = path_cycle([name for name, _ in path])
    if cycle is None or not _activated_twice(path[cycle.first : cycle.last + 1]):
        return None
    return cycle, path


def _activated_twice(stretch: Sequence[Activation]) -> bool:
    ids: dict[str, set[str | None]] = {}
    for name, invocation in stretch:
        found = ids.setdefault(name, set())
        found.add(invocation)
        if len(found) > 1:
            return True
    return False
