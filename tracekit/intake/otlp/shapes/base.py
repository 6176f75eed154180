"""The declaration of one framework family's span shape (see :mod:`tracekit.intake.otlp.shapes`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracekit.intake.otlp.decode_json import Span

__all__ = ["Shape"]


@dataclass(frozen=True, slots=True)
class Shape:
    """What a framework family's spans mean where the generic conventions do not say it.

    Attributes:
        name: the family, as docs/otlp.md names it.
        recognise: whether a span was written by this family (cheap: called per span).
        agent_name: the name of an agent span, or None to leave it to the next shape.
        is_agent: True (an agent invocation), False (a wrapper, router or step
            that only looks like one), None (the generic rules decide).
    """

    name: str
    recognise: Callable[[Span], bool]
    agent_name: Callable[[Span], str | None] | None = None
    is_agent: Callable[[Span], bool | None] | None = None
