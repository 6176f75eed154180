"""The limits frameworks stop a looping run at, as data: each family's, and the general words.

A framework stops agents that go round in circles with a limit of its own:
LangGraph's recursion limit, the OpenAI Agents SDK's ``max_turns``, Pydantic
AI's request and usage limits, smolagents' ``max_steps``, AutoGen's
termination conditions. Each family declares its limits beside its shape
(:attr:`~tracekit.intake.otlp.shapes.base.Shape.limits`); the families that
need no shape of their own to be read (their spans follow the generic
conventions) declare theirs here, as shapes that recognise no span (or
only what they declare, :attr:`~tracekit.intake.otlp.shapes.base.Shape.turn_error_ends_run`).
:data:`GENERAL` is the vocabulary for a framework that declares nothing.
:func:`is_limit` reads both; tracekit's own codes (``AGENT_...``) say
exactly what they are and are never read this way.

A framework that stops at a limit without raising (AutoGen's termination
conditions and ``max_turns``) leaves no error in any span; what it leaves
is a run whose last agent handed off to one that never ran. The intake
writes that as the run's stop, :data:`CUT_OFF`, which reads as a limit.

Example:
    >>> "GraphRecursionError" in DECLARED
    True
    >>> bool(GENERAL.search("The next request would exceed the request_limit of 6"))
    True
    >>> bool(GENERAL.search("billing -> triage: more than 5 handoffs"))
    True
    >>> bool(GENERAL.search("RATE_LIMITED: the model provider answered 429"))
    False
"""

from __future__ import annotations

import re
from typing import Final

from tracekit.events import ErrorInfo
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.shapes import SHAPES
from tracekit.intake.otlp.shapes.base import Shape

__all__ = [
    "BUDGETED",
    "CUT_OFF",
    "DECLARED",
    "DIALECT_LIMITS",
    "FORCED",
    "GENERAL",
    "ends_run_on_turn_error",
    "is_limit",
]

#: The stop of a run cut off at a handoff nobody took (a limit that raised nothing).
CUT_OFF: Final = "HandoffNotTaken"


def _never(span: Span) -> bool:
    return False


_AUTOGEN: Final = "autogen "


def _autogen(span: Span) -> bool:
    """AutoGen's: its runtime's spans (``autogen process ...``), or a span naming its system."""
    return span.name.startswith(_AUTOGEN) or span.attrs.get("gen_ai.system") == "autogen"


def _limits(name: str, *limits: str) -> Shape:
    return Shape(name=name, recognise=_never, names=lambda _: False, limits=limits)


#: The families read through the generic shapes, with their limits only.
DIALECT_LIMITS: Final[tuple[Shape, ...]] = (
    _limits("LangGraph", "GraphRecursionError", "recursion_limit", "Recursion limit of"),
    _limits("OpenAI Agents", "MaxTurnsExceeded", "max_turns", "Max turns"),
    _limits(
        "Pydantic AI", "UsageLimitExceeded", "request_limit", "tool_calls_limit", "tokens_limit"
    ),
    Shape(
        name="AutoGen",
        recognise=_autogen,
        names=lambda name: name.startswith(_AUTOGEN),
        keys=frozenset({"gen_ai.system"}),
        limits=(
            "MaxMessageTermination",
            "TokenUsageTermination",
            "max_turns",
            "Maximum number of messages",
            "Maximum number of turns",
        ),
        turn_error_ends_run=True,
    ),
    _limits("CrewAI", "max_iter", "Maximum iterations reached"),
    _limits("Google ADK", "LlmCallsLimitExceededError", "max_llm_calls"),
    _limits("Strands", "max_handoffs", "max_iterations", "MaxTokensReachedException"),
    _limits("Agno", "tool_call_limit"),
    _limits(
        "Agent Framework",
        "max_iterations",
        "maximum_iterations",
        "WorkflowConvergenceException",
        "did not converge",
    ),
)

#: Every declared limit, as written (a type's name, a setting, a phrase).
DECLARED: Final = tuple(
    dict.fromkeys(
        [CUT_OFF, *(limit for shape in (*SHAPES, *DIALECT_LIMITS) for limit in shape.limits)]
    )
)
_DECLARED: Final = tuple(word.lower() for word in DECLARED)
_ENDERS: Final = tuple(s for s in (*SHAPES, *DIALECT_LIMITS) if s.turn_error_ends_run)
#: The families whose agents stop silently at a step budget.
BUDGETED: Final = tuple(s for s in (*SHAPES, *DIALECT_LIMITS) if s.step_budget is not None)
#: The families that answer at a limit instead of raising, with a model call of their own.
FORCED: Final = tuple(s for s in (*SHAPES, *DIALECT_LIMITS) if s.forced_answer is not None)

#: What a loop counts, where "more than N of them" is a loop guard's words (not
#: requests, messages or calls: "more than 60 requests" is a provider's rate).
_LOOPED: Final = (
    r"(?:turns|steps|iterations|rounds|handoffs|hops|transfers|delegations)\b(?!\W+per\b)"
)

#: Limit and usage wording of any framework: a limit reached or exceeded, a
#: request or usage limit, a maximum of turns, steps, iterations, rounds,
#: messages, requests, handoffs or calls, or more turns, steps, iterations,
#: rounds, handoffs, hops, transfers or delegations than a number (an app's own
#: loop guard: ``billing -> triage: more than 5 handoffs``). A provider's rate
#: limit (429) is no limit of the run's own and is never read as one.
GENERAL: Final = re.compile(
    r"(?<!rate)(?<!rate[ _-])limit\w*\W+(?:\w+\W+){0,3}?(?:reached|exceeded|hit)"
    r"|(?:exceed\w*|reached|hit)\W+(?:the\W+)?(?!rate)\w*\W?limit"
    r"|would exceed|usage.?limit|request.?limit|max(?:imum)?\W*(?:number\W+of\W+)?"
    r"(?:turns|steps|iterations|iter\b|rounds|messages|requests|handoffs|(?:llm\W)?calls)"
    r"|more\W+than\W+\d+\W+(?:agent\W+)?" + _LOOPED,
    re.IGNORECASE,
)


def _says_limit(error: ErrorInfo) -> bool:
    if error.code.startswith("AGENT_"):
        return False
    texts = (error.code, error.type or "", error.message)
    if any(GENERAL.search(text) for text in texts if text):
        return True
    lowered = " ".join(texts).lower()
    return any(word in lowered for word in _DECLARED)


def is_limit(error: ErrorInfo | None) -> bool:
    """Whether the error, or a cause under it, is a framework's limit: its type,
    code or message says one of :data:`DECLARED` or the :data:`GENERAL` wording.

    Example:
        >>> is_limit(ErrorInfo(code="GraphRecursionError", message="Recursion limit of 25 reached"))
        True
        >>> is_limit(ErrorInfo(code="UsageLimitExceeded", message="would exceed the request_limit of 6"))
        True
        >>> is_limit(ErrorInfo(code="ValueError")), is_limit(ErrorInfo(code="AGENT_DEPTH_EXCEEDED"))
        (False, False)
    """
    while error is not None:
        if _says_limit(error):
            return True
        error = error.cause
    return False


def ends_run_on_turn_error(span: Span, above: Span | None = None) -> bool:
    """Whether the family of a root agent's span (or of the span above it: AutoGen's
    runtime opens the agent's span under its own ``process``) declares that an
    error out of an agent's turn ends the run."""
    return any(shape.recognise(s) for shape in _ENDERS for s in (span, above) if s is not None)
