"""Whether an error is a framework's limit, and where a run's limit struck.

The vocabulary is data (:mod:`tracekit.intake.otlp.shapes.limits`): every
family's declared limits and the general limit and usage wording, read by
its :func:`~tracekit.intake.otlp.shapes.limits.is_limit`. An error is a
limit when its type, its code or its message (or a cause's) says one;
tracekit's own codes (``AGENT_...``) say exactly what they are and are
never read this way.

Example:
    >>> from tracekit.events import ErrorInfo
    >>> is_limit(ErrorInfo(code="GraphRecursionError", message="Recursion limit of 25 reached"))
    True
    >>> is_limit(ErrorInfo(code="UsageLimitExceeded", message="would exceed the request_limit of 6"))
    True
    >>> is_limit(ErrorInfo(code="ValueError", message="bad")), is_limit(ErrorInfo(code="AGENT_DEPTH_EXCEEDED"))
    (False, False)
"""

from __future__ import annotations

from dataclasses import dataclass

from tracekit.events import ErrorInfo
from tracekit.failures.model import Call, RunFacts
from tracekit.intake.otlp.shapes.limits import is_limit

__all__ = ["LimitHit", "is_limit", "limit_hit"]


@dataclass(frozen=True, slots=True)
class LimitHit:
    """Where a limit struck: its error and the activation it struck in (None: above the agents)."""

    error: ErrorInfo
    call: Call | None = None
    agent: str | None = None


def limit_hit(run: RunFacts) -> LimitHit | None:
    """The limit the run's evidence shows, and where it struck.

    An activation whose own error is the limit (the last agent's span, the
    latest to start when several carry it up) first; then a failed step's (a
    usage counter on a model call); then the run's own error (the root, the
    runner). None when no error is a limit.

    Example:
        >>> hit = limit_hit(RunFacts("r", "LangGraph", True, False, ErrorInfo(code="GraphRecursionError")))
        >>> hit.error.code, hit.call
        ('GraphRecursionError', None)
    """
    calls = [c for c in (*run.calls, *run.sequence) if c.failed and is_limit(c.error)]
    if calls:
        last = max(calls, key=lambda c: (_at(c.start_ms), _at(c.end_ms), c.invocation_id))
        return LimitHit(last.error, last, last.agent) if last.error is not None else None
    steps = [s for s in run.failed_steps if is_limit(s.error)]
    if steps:
        step = max(steps, key=lambda s: _at(s.ts_ms))
        by_id = {c.invocation_id: c for c in (*run.calls, *run.sequence)}
        call = by_id.get(step.invocation_id) if step.invocation_id is not None else None
        return LimitHit(step.error, call, step.agent) if step.error is not None else None
    return LimitHit(run.error) if run.error is not None and is_limit(run.error) else None


def _at(ms: float | None) -> float:
    return float("-inf") if ms is None else ms
