"""Circles from the sequence of a run's activations, not only from its failing path.

Real frameworks loop by passing control on: agents hand off (or delegate)
and finish, and each activation hangs under the one that passed it control
(the tree's handoff edges, a graph's steps, across traces by span links).
So the run's sequence of activations, in start order, is the path from the
root agent down to the activation where the run was when it stopped (the
deepest, the latest to start among equals), whatever each one's status.
Where that path goes round the same agents again, the repeated stretch is a
:class:`Cycle`: its circle (written canonically), how many times it went
round, and its members (from the first entry of the cycle to the end of the
last), over which the loop's cost is summed.

Example:
    >>> path = ["LangGraph", "triage", "billing", "triage", "billing", "triage"]
    >>> cycle = path_cycle(path)
    >>> cycle.circle, cycle.revisits, (cycle.first, cycle.last)
    ('billing -> triage -> billing', 2, (1, 5))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracekit.events import canonical_circle
from tracekit.failures.model import Call, RunFacts

__all__ = ["Cycle", "activation_path", "path_cycle", "sequence_cycle"]


@dataclass(frozen=True, slots=True)
class Cycle:
    """A stretch of a path of agents that repeats a circle.

    Attributes:
        circle: the canonical circle (``a -> b -> a``).
        revisits: how many times the path went round it (1: closed once).
        first: the index on the path of the cycle's first entry.
        last: the index of its last activation.
    """

    circle: str
    revisits: int
    first: int
    last: int


def path_cycle(path: Sequence[str]) -> Cycle | None:
    """The circle a path of agents goes round: the last revisit's, stretched back as far as it repeats.

    The last agent on the path seen earlier on it (else the deepest such one)
    closes a circle of the agents between; the stretch before it is taken in
    while the path repeats the same circle.

    Example:
        >>> path_cycle(["desk", "a", "b", "c", "a", "b", "c", "a"]).circle
        'a -> b -> c -> a'
        >>> path_cycle(["desk", "a", "b"]) is None, path_cycle(["a", "b", "a"]).revisits
        (True, 1)
    """
    seen: dict[str, int] = {}
    closing: tuple[int, int] | None = None  # (earlier, later) of the deepest revisit
    for at, name in enumerate(path):
        if name in seen:
            closing = (seen[name], at)
        seen[name] = at
    if closing is None:
        return None
    start, end = closing
    span = end - start
    first = start
    while first > 0 and path[first - 1] == path[first - 1 + span]:
        first -= 1
    return Cycle(canonical_circle(path[end - span : end + 1]), (end - first) // span, first, end)


def activation_path(run: RunFacts) -> list[tuple[str, str | None]]:
    """The run's activations from its root agent down to where it was when it stopped.

    Each is ``(agent, invocation id)``; the root agent's own is ``(agent,
    None)``. The end is the deepest activation of :attr:`RunFacts.sequence`,
    the latest to start among equals; an empty sequence gives the root alone.

    Example:
        >>> a = Call("i1", None, "triage", "ok", start_ms=1.0)
        >>> b = Call("i2", "i1", "billing", "ok", start_ms=2.0)
        >>> activation_path(RunFacts("r", "LangGraph", True, False, sequence=(a, b)))
        [('LangGraph', None), ('triage', 'i1'), ('billing', 'i2')]
    """
    by_id = {c.invocation_id: c for c in run.sequence}
    depth: dict[str, int] = {}
    for call in run.sequence:
        _depth(call, by_id, depth)
    path: list[tuple[str, str | None]] = []
    if by_id:
        key = max(by_id.values(), key=lambda c: (depth[c.invocation_id], _at(c), c.invocation_id))
        cur: Call | None = key
        while cur is not None and len(path) <= len(by_id):
            path.append((cur.agent, cur.invocation_id))
            parent = cur.parent_invocation_id
            cur = by_id.get(parent) if parent is not None else None
    if run.agent is not None:
        path.append((run.agent, None))
    path.reverse()
    return path


def _depth(call: Call, by_id: dict[str, Call], depth: dict[str, int]) -> int:
    """Levels below the root, found without recursion (a path may be thousands deep)."""
    chain: list[Call] = []
    cur: Call | None = call
    while cur is not None and cur.invocation_id not in depth and len(chain) <= len(by_id):
        chain.append(cur)
        parent = cur.parent_invocation_id
        cur = by_id.get(parent) if parent is not None else None
    base = depth[cur.invocation_id] if cur is not None and cur.invocation_id in depth else 0
    for found in reversed(chain):
        base += 1
        depth[found.invocation_id] = base
    return depth[call.invocation_id]


def _at(call: Call) -> float:
    return float("-inf") if call.start_ms is None else call.start_ms


def sequence_cycle(run: RunFacts) -> tuple[Cycle, list[tuple[str, str | None]]] | None:
    """The cycle the run's sequence of activations goes round, with that path (None: no revisit).

    Example:
        >>> calls = [Call(f"i{n}", f"i{n - 1}" if n else None, a, "ok", start_ms=n)
        ...          for n, a in enumerate(["triage", "billing", "triage"])]
        >>> cycle, path = sequence_cycle(RunFacts("r", "LangGraph", True, True, sequence=tuple(calls)))
        >>> cycle.circle, [i for _, i in path[cycle.first : cycle.last + 1]]
        ('billing -> triage -> billing', ['i0', 'i1', 'i2'])
    """
    if not run.sequence:
        return None
    path = activation_path(run)
    cycle = path_cycle([name for name, _ in path])
    return (cycle, path) if cycle is not None else None
