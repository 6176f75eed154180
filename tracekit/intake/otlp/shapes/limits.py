"""The limits frameworks stop a looping run at, as data: each family's, and the general words.

A framework stops agents that go round in circles with a limit of its own:
LangGraph's recursion limit, the OpenAI Agents SDK's ``max_turns``, Pydantic
AI's request and usage limits, smolagents' ``max_steps``, AutoGen's
termination conditions. Each family declares its limits beside its shape
(:attr:`~tracekit.intake.otlp.shapes.base.Shape.limits`); the families that
need no shape of their own to be read (their spans follow the generic
conventions) declare theirs here, as shapes that recognise no span.
:data:`GENERAL` is the vocabulary for a framework that declares nothing.
:func:`tracekit.failures.limits.is_limit` reads both.

Example:
    >>> "GraphRecursionError" in DECLARED
    True
    >>> bool(GENERAL.search("The next request would exceed the request_limit of 6"))
    True
    >>> bool(GENERAL.search("RATE_LIMITED: the model provider answered 429"))
    False
"""

from __future__ import annotations

import re
from typing import Final

from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.shapes import SHAPES
from tracekit.intake.otlp.shapes.base import Shape

__all__ = ["DECLARED", "DIALECT_LIMITS", "GENERAL"]


def _never(span: Span) -> bool:
    return False


def _limits(name: str, *limits: str) -> Shape:
    return Shape(name=name, recognise=_never, names=lambda _: False, limits=limits)


#: The families read through the generic shapes, with their limits only.
DIALECT_LIMITS: Final[tuple[Shape, ...]] = (
    _limits("LangGraph", "GraphRecursionError", "recursion_limit", "Recursion limit of"),
    _limits("OpenAI Agents", "MaxTurnsExceeded", "max_turns", "Max turns"),
    _limits(
        "Pydantic AI", "UsageLimitExceeded", "request_limit", "tool_calls_limit", "tokens_limit"
    ),
    _limits(
        "AutoGen",
        "MaxMessageTermination",
        "TokenUsageTermination",
        "max_turns",
        "Maximum number of messages",
        "Maximum number of turns",
    ),
    _limits("CrewAI", "max_iter", "Maximum iterations reached"),
    _limits("Google ADK", "LlmCallsLimitExceededError", "max_llm_calls"),
    _limits("Strands", "max_handoffs", "max_iterations", "MaxTokensReachedException"),
    _limits("Agno", "tool_call_limit"),
    _limits("Agent Framework", "max_iterations", "maximum_iterations"),
)

#: Every declared limit, as written (a type's name, a setting, a phrase).
DECLARED: Final = tuple(
    dict.fromkeys(limit for shape in (*SHAPES, *DIALECT_LIMITS) for limit in shape.limits)
)

#: Limit and usage wording of any framework: a limit reached or exceeded, a
#: request or usage limit, a maximum of turns, steps, iterations, rounds,
#: messages, requests, handoffs or calls. A provider's rate limit (429) is no
#: limit of the run's own and is never read as one.
GENERAL: Final = re.compile(
    r"(?<!rate)(?<!rate[ _-])limit\w*\W+(?:\w+\W+){0,3}?(?:reached|exceeded|hit)"
    r"|(?:exceed\w*|reached|hit)\W+(?:the\W+)?(?!rate)\w*\W?limit"
    r"|would exceed|usage.?limit|request.?limit|max(?:imum)?\W*(?:number\W+of\W+)?"
    r"(?:turns|steps|iterations|iter\b|rounds|messages|requests|handoffs|(?:llm\W)?calls)",
    re.IGNORECASE,
)
