"""OpenInference (Arize): ``openinference.span.kind`` on every span.

The generic fallback for the frameworks OpenInference instruments: its agents
are ``AGENT`` spans (decided with LangGraph's shapes in
:mod:`tracekit.intake.otlp.spans`) named by ``agent.name`` or
``gen_ai.agent.name``, else by ``graph.node.id``: CrewAI's agent spans
(``<role>.<task>.execute``, ``<role>.kickoff``) carry the agent's role only
there. A framework whose OpenInference spans need more (a ``<name>.run``
agent, a router marked ``AGENT``) gets its own shape.

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "", "billing.Charge C-1..execute", 1, 2,
    ...     {"openinference.span.kind": "AGENT", "graph.node.id": "billing"}, False, "", None)
    >>> SHAPE.agent_name(span)
    'billing'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tracekit.intake.otlp.shapes.base import Shape

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span

__all__ = ["NAME_KEYS", "SHAPE", "is_openinference"]

NAME_KEYS: Final = ("gen_ai.agent.name", "agent.name", "graph.node.id")


def is_openinference(span: Span) -> bool:
    """Whether OpenInference wrote the span."""
    return "openinference.span.kind" in span.attrs


def _name(span: Span) -> str | None:
    """``gen_ai.agent.name``, ``agent.name``, else ``graph.node.id`` on an ``AGENT`` span."""
    if span.attrs.get("openinference.span.kind") != "AGENT":
        return None
    for key in NAME_KEYS:
        found = span.attrs.get(key)
        if found:
            return str(found)
    return None


SHAPE: Final = Shape(
    name="OpenInference",
    recognise=is_openinference,
    agent_name=_name,
    names=lambda name: False,  # known by its attribute alone
    keys=frozenset({"openinference.span.kind"}),
)
