"""OpenInference (Arize): ``openinference.span.kind`` on every span.

The generic fallback for the frameworks OpenInference instruments: its agents
are ``AGENT`` spans (decided with LangGraph's shapes in
:mod:`tracekit.intake.otlp.spans`) named by ``agent.name`` or
``gen_ai.agent.name``; the naming is the GenAI one, so this shape only says
which spans are OpenInference's. A framework whose OpenInference spans need
more (a ``<name>.run`` agent, a router marked ``AGENT``) gets its own shape.
"""

from __future__ import annotations

from typing import Final

from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.shapes.base import Shape

__all__ = ["SHAPE", "is_openinference"]


def is_openinference(span: Span) -> bool:
    """Whether OpenInference wrote the span."""
    return "openinference.span.kind" in span.attrs


SHAPE: Final = Shape(name="OpenInference", recognise=is_openinference)
