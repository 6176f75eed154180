"""Following span links, across traces, to the agent that sent the message that woke an agent.

Message-passing runtimes and workflow executors start each
agent under the runtime's own ``process`` / ``executor`` span and link
*that* span to the message that woke it (``send``, ``create``), often in
another trace. :func:`linked_caller` follows the links from an agent span's
non-agent ancestors to the agent that owns the message; the ``span.link``
edge rule (:mod:`tracekit.intake.otlp.edges`) asks it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the index calls the rules that call this; this reads the index
    from tracekit.intake.otlp.index_view import IndexView, Key

__all__ = ["children_agents_of_span", "linked_caller"]

#: Hops through relaying spans (a group chat's manager relays every handoff).
_HOPS = 8


def linked_caller(index: IndexView, key: Key) -> tuple[Key, Key] | None:
    """The agent a span link leads to from ``key`` or a non-agent span above it.

    The message is followed up to its agent: the agent above it, else the
    agent that ran before it under the same parent (the executor that sent
    it); a message with neither is itself linked further, a few hops at most.

    Returns:
        ``(caller agent, the linked span)``, or None.
    """
    seen: set[Key] = set()
    frontier = [index.parent_of(key)]
    for _ in range(_HOPS):
        links: list[Key] = []
        for start in frontier:
            cur = start
            while cur is not None and cur not in index.agent_set and cur not in seen:
                seen.add(cur)
                links.extend(link for link in index.spans[cur].links if link in index.spans)
                cur = index.parent_of(cur)
        frontier = []
        for link in links:
            owner = _owner(index, link)
            if owner is not None and owner != key:
                return owner, link
            frontier.append(link)
        if not frontier:
            return None
    return None


def _owner(index: IndexView, key: Key) -> Key | None:
    """The agent a (message) span belongs to: above it, else run just before it beside it."""
    if key in index.agent_set:
        return key
    above = index.otel.get(key)
    if above is not None:
        return above
    start = index.spans[key].start
    found: Key | None = None
    for other in children_agents_of_span(index, index.parent_of(key)):
        if index.spans[other].start <= start and (
            found is None or index.spans[other].start >= index.spans[found].start
        ):
            found = other
    return found


def children_agents_of_span(index: IndexView, parent: Key | None) -> list[Key]:
    """The agent spans right under a (non-agent) span (the index keeps the map once built)."""
    if parent is None:
        return []
    if index.agent_children is None:
        index.agent_children = {}
        for agent in index.agent_set:
            above = index.parent_of(agent)
            if above is not None:
                index.agent_children.setdefault(above, []).append(agent)
    return index.agent_children.get(parent, [])
