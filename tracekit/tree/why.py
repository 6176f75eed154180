"""Why an invocation failed: the failed callee its error was carried up from, down to the origin.

A wrapped failure (``AGENT_FAILED``, a recursion refusal rethrown, or an
error with a ``cause``: an exception re-raised or raised from a callee's) is
followed down the tree, each time to the failed callee its error came from,
until an invocation failed on its own: the origin. :func:`why_text` is the
short text the tree, the diff and the run page print beside a wrapped
failure: ``AGENT_FAILED <- TIMEOUT in refunds "upstream timed out"``.

Example:
    >>> from tracekit.events import ErrorInfo
    >>> cause = ErrorInfo(code="TIMEOUT", message="upstream timed out")
    >>> def step(agent, error, steps=()):
    ...     return AgentStep(agent=agent, node=None, kind="delegate", runId=agent, parentRunId=None,
    ...         invocationId=agent, ok=False, status="error", durationMs=1.0, error=error,
    ...         steps=list(steps))
    >>> billing = step("billing", ErrorInfo(code="AGENT_FAILED", cause=cause), [step("refunds", cause)])
    >>> why_text(billing.error, billing.steps)
    'AGENT_FAILED <- TIMEOUT in refunds "upstream timed out"'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tracekit._util.text import escape
from tracekit.events import ErrorInfo
from tracekit.tree.model import AgentStep, Step

__all__ = ["failure_origin", "why_text"]

_WRAPPERS: Final = frozenset({"AGENT_FAILED", "AGENT_RECURSION"})
_FAILED: Final = frozenset({"error", "refused"})
_MESSAGE_CHARS: Final = 60


def _innermost(error: ErrorInfo) -> ErrorInfo:
    while error.cause is not None:
        error = error.cause
    return error


def _from(error: ErrorInfo, steps: Sequence[Step]) -> AgentStep | None:
    """The failed callee among ``steps`` that ``error`` was carried up from, if any."""
    if error.cause is None and error.code not in _WRAPPERS:
        return None
    failed = [s for s in steps if isinstance(s, AgentStep) and s.status in _FAILED]
    if not failed:
        return None
    wanted = error.cause
    if wanted is None:
        return failed[-1]  # an AGENT_FAILED that names no cause wraps the last to fail
    found = [s for s in failed if s.error == wanted]
    found = found or [s for s in failed if s.error is not None and s.error.code == wanted.code]
    return found[0] if found else None


def failure_origin(error: ErrorInfo | None, steps: Sequence[Step]) -> AgentStep | None:
    """The invocation below where a failure with ``error`` began, or None if it began here.

    Args:
        error: the failed invocation's (or run's) error.
        steps: its steps (the callees among them are searched).
    """
    found = None
    for _ in range(10_000):  # a bound: the tree is finite, a malformed one must not spin
        if error is None:
            break
        below = _from(error, steps)
        if below is None:
            break
        found, error, steps = below, below.error, below.steps
    return found


def why_text(error: ErrorInfo | None, steps: Sequence[Step], *, plain: bool = False) -> str | None:
    """``CODE <- ORIGIN_CODE in agent "message"`` for a wrapped failure, else None.

    Names are escaped for a terminal unless ``plain`` (for JSON, which its
    reader escapes where it shows it).
    """
    origin = failure_origin(error, steps)
    if origin is None or origin.error is None or error is None:
        return None
    first = _innermost(origin.error)
    esc = (lambda text: text) if plain else escape
    text = f"{esc(error.code)} <- {esc(first.code)} in {esc(origin.agent)}"
    message = first.message.removeprefix(f"{first.code}: ").strip()
    if message and not first.chain:  # a circle is printed after it, and says it all
        short = message if len(message) <= _MESSAGE_CHARS else message[: _MESSAGE_CHARS - 1] + "…"
        text += f' "{esc(short)}"'
    return text
