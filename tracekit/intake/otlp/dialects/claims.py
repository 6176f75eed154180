"""A span's kind and the name it gives, as the sections of its trace's dialect claim it.

Example:
    >>> from tracekit.intake.otlp.decoded import Span
    >>> from tracekit.intake.otlp.dialect import Dialect, Match
    >>> mine = Dialect("mine", tools=Match(names=("tool:*",)))
    >>> span = Span("t", "a", "", "tool:lookup", 1, 2, {}, False, "", None)
    >>> claim({("t", "a"): span}, span, mine)
    >>> span.attrs
    {'tracekit.dialect.kind': 'tool', 'gen_ai.tool.name': 'lookup'}
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from tracekit.intake.otlp.dialect import Dialect, Match
from tracekit.intake.otlp.dialects.keys import KIND, Key
from tracekit.intake.otlp.inputs import CURRENT_AGENT

if TYPE_CHECKING:  # the decoders ask which keys to keep: they import this package
    from tracekit.intake.otlp.decoded import Span

__all__ = ["claim"]

#: The attribute the graph rules read a run's metadata from (JSON).
_META: Final = "metadata"

#: Sections in the order they are asked: a router or wrapper that looks like an agent is
#: not one, and a wrapper that calls a tool or a model (a workflow's task naming it) is the call.
_KINDS: Final = (
    ("routers", "wrapper", None),
    ("tools", "tool", "gen_ai.tool.name"),
    ("models", "model", None),
    ("wrappers", "wrapper", None),
    ("workflows", "workflow", "gen_ai.workflow.name"),
    ("agents", "agent", "gen_ai.agent.name"),
)


def claim(spans: dict[Key, Span], span: Span, dialect: Dialect) -> None:
    if dialect.edges.metadata_from and _META not in span.attrs:
        _gather_metadata(span, dialect.edges.metadata_from)
    if dialect.turns and CURRENT_AGENT not in span.attrs:
        agent = _turn_of(span, dialect.turns)
        if agent is not None:
            span.attrs = {**span.attrs, CURRENT_AGENT: agent}
    for section, kind, name_key in _KINDS:
        match: Match = getattr(dialect, section)
        if not match or not match.matches(span.name, span.attrs):
            continue
        name = match.name_of(span.name, span.attrs) or span.name
        if kind == "agent" and _inside_same(spans, span, match, name):
            continue  # an attribute carried down into the agent's own spans
        attrs = {**span.attrs, KIND: kind}
        if name_key is not None:
            attrs[name_key] = name
        span.attrs = attrs
        return


def _gather_metadata(span: Span, prefixes: tuple[str, ...]) -> None:
    """A run's metadata written one key an attribute, gathered as the one ``metadata`` table.

    The graph rules read a framework's run metadata (its node, step and
    namespace) as one JSON attribute; a dialect that flattens it under a
    prefix (values JSON-encoded) is read the same.
    """
    meta: dict[str, Any] = {}
    for key, value in span.attrs.items():
        if key.startswith(prefixes):
            name = key[next(len(p) for p in prefixes if key.startswith(p)) :]
            meta[name] = _decoded(value)
    if meta:
        span.attrs = {**span.attrs, _META: json.dumps(meta)}


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _turn_of(span: Span, turns: Match) -> str | None:
    """The agent whose turn the span starts, when the dialect's ``[turns]`` claims it."""
    if not turns.matches(span.name, span.attrs):
        return None
    return turns.name_of(span.name, span.attrs)


def _inside_same(spans: dict[Key, Span], span: Span, match: Match, name: str) -> bool:
    """Whether the span's parent is the same agent (its name carried by attribute to its steps)."""
    if Match(names=match.names).matches(span.name, {}):
        return False  # named as an agent itself: a call, even of the same agent
    parent = spans.get((span.trace, span.parent)) if span.parent else None
    if parent is None or not match.matches(parent.name, parent.attrs):
        return False
    return (match.name_of(parent.name, parent.attrs) or parent.name) == name
