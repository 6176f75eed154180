"""Agents with no agent span: a span that calls a model and tools in a loop is one.

Some frameworks write no agent span at all: an agent is a module whose
method span calls the model, then a tool, then the model again. In a trace
with no agent span, the lowest span under which at least two model calls
and one tool call meet (not counting those of an agent found below it) is
an agent, named after its module (the span name less a method suffix such
as ``.forward`` or ``.run``) unless an attribute names it.

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> def span(i, parent, name, attrs):
    ...     return Span("t", i, parent, name, 1, 2, attrs, False, "", None)
    >>> chat = {"gen_ai.operation.name": "chat"}
    >>> spans = {("t", s.id): s for s in [
    ...     span("m", "", "ReAct.forward", {}),
    ...     span("a", "m", "chat", chat),
    ...     span("b", "m", "lookup", {"gen_ai.tool.name": "lookup"}),
    ...     span("c", "m", "chat", chat)]}
    >>> loop_agents(spans, {"t"})
    {'t'}
    >>> spans["t", "m"].attrs["gen_ai.agent.name"]
    'ReAct'
"""

from __future__ import annotations

from typing import Final

from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import KIND
from tracekit.intake.otlp.kinds import is_llm, is_tool

__all__ = ["METHODS", "loop_agents", "models_of_its_own"]

Key = tuple[str, str]
#: Model calls and tool calls that make a loop.
_MODELS: Final = 2
_TOOLS: Final = 1
#: Method names a module's span ends with: the agent is named after the module.
METHODS: Final = (
    ".forward",
    ".aforward",
    ".run",
    ".arun",
    ".__call__",
    ".acall",
    ".call",
    ".invoke",
    ".ainvoke",
    ".execute",
)


def loop_agents(spans: dict[Key, Span], traces: set[str]) -> set[str]:
    """Mark the loop agents of ``traces`` (those with no agent span); the traces that had one."""
    children: dict[Key, list[Key]] = {}
    roots: list[Key] = []
    for key, span in spans.items():
        if key[0] not in traces:
            continue
        parent = (span.trace, span.parent)
        if span.parent and parent in spans:
            children.setdefault(parent, []).append(key)
        else:
            roots.append(key)
    return {root[0] for root in roots if _walk(spans, children, root)}


def _walk(spans: dict[Key, Span], children: dict[Key, list[Key]], root: Key) -> int:
    """Post-order, without recursion: each span's (model calls, tool calls) not yet an agent's."""
    counts: dict[Key, tuple[int, int]] = {}
    found = 0
    stack: list[tuple[Key, bool]] = [(root, False)]
    while stack:
        key, done = stack.pop()
        if not done:
            stack.append((key, True))
            stack.extend((child, False) for child in children.get(key, ()))
            continue
        span = spans[key]
        models = int(is_llm(span))
        tools = int(is_tool(span))
        for child in children.get(key, ()):
            below = counts.pop(child)
            models += below[0]
            tools += below[1]
        if models >= _MODELS and tools >= _TOOLS and not is_llm(span) and not is_tool(span):
            _mark(span)
            found += 1
            models = tools = 0  # this agent's calls are its own, not its caller's
        counts[key] = (models, tools)
    return found


def _mark(span: Span) -> None:
    attrs = span.attrs
    name = attrs.get("gen_ai.agent.name") or _module(span.name)
    span.attrs = {**attrs, KIND: "agent", "gen_ai.agent.name": str(name)}


def _module(name: str) -> str:
    for method in METHODS:
        if name.endswith(method) and len(name) > len(method):
            return name.removesuffix(method)
    return name


def models_of_its_own(spans: dict[Key, Span], key: Key, agents: set[Key]) -> bool:
    """Whether the span calls a model itself: a model call under it with no agent between.

    A graph that runs the model and the tools itself (a ReAct graph written as a
    workflow, its agents only reached through its tool calls) is an agent, not the
    run of a team.

    Example:
        >>> from tracekit.intake.otlp.decode_json import Span
        >>> chat = {"gen_ai.operation.name": "chat"}
        >>> spans = {("t", s.id): s for s in [
        ...     Span("t", "g", "", "graph", 1, 2, {}, False, "", None),
        ...     Span("t", "n", "g", "node", 1, 2, {}, False, "", None),
        ...     Span("t", "c", "n", "chat", 1, 2, chat, False, "", None)]}
        >>> models_of_its_own(spans, ("t", "g"), {("t", "g")})
        True
        >>> models_of_its_own(spans, ("t", "g"), {("t", "g"), ("t", "n")})
        False
    """
    for at, span in spans.items():
        if at[0] != key[0] or not is_llm(span):
            continue
        cur: Key | None = at
        seen: set[Key] = set()
        while cur is not None and cur not in agents and cur not in seen:
            seen.add(cur)
            parent = spans[cur].parent
            cur = (key[0], parent) if parent and (key[0], parent) in spans else None
        if cur == key:
            return True
    return False
