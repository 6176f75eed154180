"""How each framework family writes its spans: one module a family, generic shapes last.

A :class:`Shape` declares how to recognise a family's spans and what its
spans mean where the generic conventions do not say it: which spans are
agents (or only wrappers around one), and how an agent is named. The span
index asks :data:`SHAPES` in order; the first shape that recognises a span
and has an answer gives it, and the generic OpenTelemetry GenAI and
OpenInference shapes (:mod:`.genai`, :mod:`.openinference`) answer for any
framework not listed. A shape says which span names and attributes it may
claim, so that the index asks it only of those (a name is looked up once:
most spans of a fleet are no framework's). A new framework is a declaration here (a ``*.toml``
dialect, :mod:`tracekit.intake.otlp.dialect`), and, only where its shape
needs code, a module and one line in :data:`SHAPES`, before the generic
ones; the rules outside this package name no framework.

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "", "invoke_agent triage", 1, 2,
    ...     {"gen_ai.operation.name": "invoke_agent"}, False, "", None)
    >>> agent_name(span), agent_verdict(span), may_decide(span)
    ('triage', None, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from tracekit.intake.otlp.names import NameMemo
from tracekit.intake.otlp.shapes import genai, langgraph, llamaindex, openinference, smolagents
from tracekit.intake.otlp.shapes.base import Shape

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span

__all__ = [
    "DECIDER_KEYS",
    "DECIDER_NAMES",
    "DECIDES",
    "NAME_KEYS",
    "SHAPES",
    "Shape",
    "agent_name",
    "agent_verdict",
    "graph_meta",
    "graph_node",
    "graph_shapes",
    "graph_step",
    "may_decide",
    "namespace",
    "turn_invocations",
    "workflow_verdict",
]

#: Framework shapes first, the generic conventions last (their answers are the fallback).
SHAPES: Final[tuple[Shape, ...]] = (
    smolagents.SHAPE,
    llamaindex.SHAPE,
    openinference.SHAPE,
    genai.SHAPE,
)
#: A graph framework's structure: its agents and workflows per trace, a node run's
#: metadata, checkpoint namespace and step (read by the kinds and the edge rules).
graph_shapes: Final = langgraph.graph_shapes
graph_meta: Final = langgraph.graph_meta
namespace: Final = langgraph.namespace
graph_step: Final = langgraph.step_of
graph_node: Final = langgraph.node_of_meta
#: Agents with no span, only turns: each run of one agent's turns is an invocation.
turn_invocations: Final = llamaindex.invocations

#: Attributes that name an agent, in any shape.
NAME_KEYS: Final = frozenset((*genai.NAME_KEYS, *openinference.NAME_KEYS))
_NAMERS: Final = tuple(s for s in SHAPES if s.agent_name is not None)
_VERDICTS: Final = tuple(s for s in SHAPES if s.is_agent is not None)
_WORKFLOWS: Final = tuple(s for s in SHAPES if s.is_workflow is not None)
#: Whether any shape decides agents (if none does, the span index skips asking).
DECIDES: Final = bool(_VERDICTS)


def _names_of(shapes: tuple[Shape, ...]) -> NameMemo[bool]:
    """Whether any of the shapes may claim a span of a name, remembered per name."""
    tests = tuple(shape.names for shape in shapes)
    if any(test is None for test in tests):
        return NameMemo(lambda name: True)
    return NameMemo(lambda name: any(test(name) for test in tests))  # type: ignore[misc]


def _keys_of(shapes: tuple[Shape, ...]) -> frozenset[str]:
    return frozenset().union(*(shape.keys for shape in shapes))


_DECIDERS: Final = tuple(dict.fromkeys(_VERDICTS + _WORKFLOWS))
#: Whether a shape that decides agents or workflows may claim a span of a name
#: (``DECIDER_NAMES[span.name]``: a lookup once the name was seen).
DECIDER_NAMES: Final = _names_of(_DECIDERS)
#: Attributes by which such a shape may claim a span whatever its name.
DECIDER_KEYS: Final = _keys_of(_DECIDERS)
_NAMER_NAMES: Final = _names_of(_NAMERS)
_NAMER_KEYS: Final = _keys_of(_NAMERS)


def may_decide(span: Span) -> bool:
    """Whether a framework's shape may overrule the generic rules on the span.

    When not, :func:`agent_verdict` and :func:`workflow_verdict` are None: the
    span index tests this inline (``DECIDER_NAMES``, ``DECIDER_KEYS``) before
    asking them, so that a span no shape claims costs a lookup.
    """
    return DECIDER_NAMES[span.name] or not DECIDER_KEYS.isdisjoint(span.attrs)


def _first_name(span: Span) -> str:
    """The agent's name: the first shape that recognises the span and names it."""
    if _NAMER_NAMES[span.name] or not _NAMER_KEYS.isdisjoint(span.attrs):
        for shape in _NAMERS:
            if shape.recognise(span):
                name = shape.agent_name(span)  # type: ignore[misc]
                if name:
                    return name
    return genai.bare_name(span)


#: The agent's name: the first shape that recognises the span and names it, else
#: the generic one (called directly when no shape names agents: it is per agent).
agent_name: Final[Callable[[Span], str]] = _first_name if _NAMERS else genai.bare_name


def agent_verdict(span: Span) -> bool | None:
    """Whether a framework's shape says the span is an agent (None: the generic rules decide)."""
    for shape in _VERDICTS:
        if shape.recognise(span):
            verdict = shape.is_agent(span)  # type: ignore[misc]
            if verdict is not None:
                return verdict
    return None


def workflow_verdict(span: Span) -> bool | None:
    """Whether a framework's shape says the span is a whole run (None: the generic rules decide)."""
    for shape in _WORKFLOWS:
        if shape.recognise(span):
            verdict = shape.is_workflow(span)  # type: ignore[misc]
            if verdict is not None:
                return verdict
    return None
