"""Why a root run ended as it did, in words: its outcome, its circle, where its failure began.

A :class:`RootCause` is what the classification (:mod:`tracekit.failures`)
concluded of a root run, with the message of its origin; the store reads it
from its rows (:func:`tracekit.store.cause.root_cause`), a trace file's tree
from its records (:func:`tracekit.failures.cause.run_causes`), and
:func:`describe_cause` says it the same way under every tree, on the run
page and in ``tracekit tree``.

Example:
    >>> cause = RootCause("r1", "failed:recursion", "critic -> planner -> critic",
    ...     "planner", "LoopDetected", None, "delegation loop", "desk", "planner", 2)
    >>> print("\\n".join(describe_cause(cause)))
    outcome failed:recursion: circle critic -> planner -> critic (wrong by construction: it will happen again)
    refused in agent planner at depth 2 (LoopDetected): "delegation loop"
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from tracekit._util.text import escape
from tracekit.events import ErrorInfo

__all__ = ["MESSAGE_CHARS", "RootCause", "describe_cause", "describe_causes", "origin_message"]


class RootCause(NamedTuple):
    """A root run's outcome and the origin of its failure (None where there is none)."""

    run_id: str
    outcome: str | None
    circle: str | None
    agent: str | None  # the origin's agent
    code: str | None
    step: str | None  # a degraded run's failed step
    message: str | None
    service: str | None
    entry: str | None  # the run's root agent
    depth: int | None  # the origin's depth (1: called by the root agent)


#: How much of an origin's message is said: its first line, cut to this many characters
#: (a framework's message may hold a whole traceback).
MESSAGE_CHARS: Final = 200

_OUTCOMES: Final = {
    "incomplete": "no end was seen (crashed, or still running)",
    "cancelled": "the run was cancelled",
}


def origin_message(error: ErrorInfo | None, code: str | None, fallback: str | None) -> str | None:
    """The message of the innermost error with ``code`` (causes nested), else ``fallback``.

    An origin invocation may wrap a cause that no callee raised (a failed
    step's exception, say): the run's origin code is that cause's, and so is
    the message to show beside it. A message is kept as it came (a
    structured status message too); an empty one says nothing.

    Example:
        >>> inner = ErrorInfo(code="Boom", message="{'message': 'Max turns exceeded'}")
        >>> origin_message(ErrorInfo(code="AGENT_FAILED", message="wrapped", cause=inner), "Boom", None)
        "{'message': 'Max turns exceeded'}"
        >>> origin_message(ErrorInfo(code="Boom"), "Boom", "the run's"), origin_message(None, "Boom", None)
        ("the run's", None)
    """
    message = fallback
    found = error
    while found is not None:
        if found.code == code and found.message:
            message = found.message
        found = found.cause
    return message


def describe_cause(cause: RootCause) -> list[str]:
    """The cause in one or two lines of text, names escaped; nothing for a run that ended ok."""
    outcome = cause.outcome or "unclassified"
    if outcome == "ok":
        return []
    head = f"outcome {escape(outcome)}"
    if cause.circle:
        head += f": circle {escape(cause.circle)} (wrong by construction: it will happen again)"
    elif outcome in _OUTCOMES:
        head += f": {_OUTCOMES[outcome]}"
    origin = _origin(cause)
    return [head, origin] if origin else [head]


def _origin(cause: RootCause) -> str | None:
    """Where the failure began: the agent (and step), its code, its message."""
    if cause.agent is None and cause.code is None:
        return None
    verb = "refused in" if cause.circle or cause.outcome == "failed:refused" else "began in"
    where = f"agent {escape(cause.agent or cause.entry or '?')}"
    if cause.step:
        where = f"step {escape(cause.step)} of {where}"
    if cause.depth:
        where += f" at depth {cause.depth}"
    code = f" ({escape(cause.code)})" if cause.code else ""
    said = f': "{escape(_gist(cause.message))}"' if cause.message else ""
    went_on = "; the agent went on" if cause.step else ""
    return f"{verb} {where}{code}{said}{went_on}"


def _gist(message: str) -> str:
    """The message's first line that says something, cut to :data:`MESSAGE_CHARS`.

    Example:
        >>> _gist("RuntimeError('declined')\\nTraceback (most recent call last):")
        "RuntimeError('declined')"
    """
    first = next((line for line in message.splitlines() if line.strip()), message)
    return first if len(first) <= MESSAGE_CHARS else first[: MESSAGE_CHARS - 1] + "…"


def describe_causes(causes: Sequence[RootCause], *, named: bool = False) -> list[str]:
    """The causes of several runs, in order, for below their trees; nothing for runs that ended ok.

    One run's lines are :func:`describe_cause`'s; ``named`` (a forest of
    several trees) puts each run's id before its outcome and indents the rest.

    Example:
        >>> ok = RootCause("r1", "ok", None, None, None, None, None, None, "desk", None)
        >>> cut = RootCause("r2", "degraded", None, "desk", "LINT", "check", None, None, "desk", None)
        >>> describe_causes([ok, cut], named=True)
        ['run r2: outcome degraded', '  began in step check of agent desk (LINT); the agent went on']
    """
    lines: list[str] = []
    for cause in causes:
        said = describe_cause(cause)
        if said and named:
            said = [f"run {escape(cause.run_id)}: {said[0]}", *(f"  {line}" for line in said[1:])]
        lines.extend(said)
    return lines
