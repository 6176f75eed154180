"""The OpenTelemetry GenAI semantic conventions: the fallback shape for any framework.

An agent is named by ``gen_ai.agent.name`` (or OpenInference's ``agent.name``,
or ``gen_ai.workflow.name`` for a workflow), else by its span name without
the ``invoke_agent`` / ``invoke_workflow`` operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tracekit.intake.otlp.shapes.base import Shape

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span

__all__ = ["NAME_KEYS", "SHAPE", "bare_name"]

NAME_KEYS: Final = ("gen_ai.agent.name", "agent.name", "gen_ai.workflow.name")


def bare_name(span: Span) -> str:
    """``gen_ai.agent.name``, ``agent.name``, ``gen_ai.workflow.name``, else the span name."""
    attrs = span.attrs
    for key in NAME_KEYS:
        name = attrs.get(key)
        if name:
            return str(name)
    bare = span.name.removeprefix("invoke_agent ").removeprefix("invoke_workflow ")
    return bare.strip() or span.name or "?"


SHAPE: Final = Shape(name="OpenTelemetry GenAI", recognise=lambda span: True)
