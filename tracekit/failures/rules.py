"""The classification of a run, as small pure rules applied in order.

A rule takes a run's facts (:class:`RunFacts`: how the run ended and its
invocations) and returns a :class:`Finding` or None; :data:`RULES` lists them
in the order they are tried, and the first finding wins (as sqlglot's
optimizer lists its rules). The classes, after the seed's "What a watcher is
told":

* ``incomplete``: no end was seen (crashed, or still running: told apart by
  age with :func:`incomplete_state`);
* ``cancelled``: the run was cancelled;
* ``failed:recursion``: a delegation closed a circle of agents
  (``AGENT_RECURSION``, or an app's loop guard or limit on the failing
  path): wrong by construction, it will happen again; or the run's sequence
  of activations went round a circle and a framework's limit stopped it
  (:func:`limit_loop`);
* ``failed:refused``: a call was refused (depth, allow-list, registry, input
  contract) and nobody caught it;
* ``failed:child``: a delegated agent threw and the failure travelled up,
  wrapped as ``AGENT_FAILED`` at each level;
* ``degraded``: the run ended ok, but its agents went round a circle until a
  limit cut them off, silently or handled by the app (:func:`limit_stop`);
  or an invocation inside it failed or was refused and a caller handled it;
  or, when no invocation failed, a step (a tool or model call) failed and
  its agent went on (:func:`failed_step`);
* ``ok``.

A run stopped at a loop's limit names its circle and limit, and its origin
is the agent where the limit struck: the activation whose own error is the
limit, else (a limit raised above the agents, by the root, the runner or a
usage counter) the last activation of the circle, the one running when it
struck. A run that finished (``ok`` or ``degraded``) whose agents went round
a circle :data:`LOOP_MIN` times or more keeps its class and carries a loop
finding (:attr:`Finding.loop`, the store's ``loops`` table, where what the
circle cost is summed).

A failed invocation is the ``origin`` of a failure or only ``wrapped`` one
from below (:func:`failure_role`). The origin of a run's failure is found by
walking down from the root's failed call, following ``error.cause`` and the
invocation tree, for as many levels as wrapped it (:func:`failing_origin`).

Example:
    >>> from tracekit.events import ErrorInfo
    >>> refused = Call("i2", "i1", "orders", "refused",
    ...     ErrorInfo(code="AGENT_RECURSION", chain=["orders", "billing", "orders"]))
    >>> wrapper = Call("i1", None, "orders", "error", refused.error)
    >>> run = RunFacts("r", "desk", has_end=True, ok=False, calls=(wrapper, refused))
    >>> finding = classify_run(run)
    >>> finding.outcome, finding.circle, finding.origin.invocation_id
    ('failed:recursion', 'billing -> orders -> billing', 'i2')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final, Literal

from tracekit.events import ErrorInfo, canonical_circle
from tracekit.failures.circles import (
    agent_path,
    innermost,
    loop_refusal,
    named_circle,
    path_circle,
)
from tracekit.failures.loops import LOOP_MIN, limit_finding, with_loop
from tracekit.failures.model import (
    CANCELLED,
    FAILED_STATUSES,
    RECURSION,
    REFUSAL_CODES,
    WRAPPER_CODES,
    Call,
    FailedStep,
    Finding,
    Loop,
    Role,
    Rule,
    RunFacts,
)
from tracekit.failures.outcomes import OUTCOMES, STALE_AFTER_MS, Outcome

__all__ = [
    "CANCELLED",
    "FAILED_STATUSES",
    "LOOP_MIN",
    "OUTCOMES",
    "RECURSION",
    "REFUSAL_CODES",
    "RULES",
    "STALE_AFTER_MS",
    "WRAPPER_CODES",
    "Call",
    "FailedStep",
    "Finding",
    "Loop",
    "Outcome",
    "Role",
    "Rule",
    "RunFacts",
    "agent_path",
    "canonical_circle",
    "classify_run",
    "failing_origin",
    "failure_role",
    "failure_roles",
    "incomplete_state",
    "innermost",
    "limit_loop",
    "limit_stop",
    "loop_refusal",
    "named_circle",
    "path_circle",
]


def incomplete_state(last_seen_ms: float | None, now_ms: float) -> Literal["crashed", "running"]:
    """Tell an incomplete run that crashed from one still running, by its age.

    Example:
        >>> incomplete_state(0.0, STALE_AFTER_MS + 1), incomplete_state(0.0, 1000.0)
        ('crashed', 'running')
    """
    if last_seen_ms is None or now_ms - last_seen_ms > STALE_AFTER_MS:
        return "crashed"
    return "running"


# --- failed invocations: origin or wrapped ---------------------------------------


def _failed_children(calls: Iterable[Call]) -> dict[str | None, list[Call]]:
    below: dict[str | None, list[Call]] = {}
    for call in calls:
        if call.failed:
            below.setdefault(call.parent_invocation_id, []).append(call)
    return below


def failure_role(call: Call, failed_children: Sequence[Call]) -> Role | None:
    """Whether a failed invocation began a failure or only carried one up.

    A call fails as a wrapper when a callee of it failed and it failed with a
    wrapper's code (``AGENT_FAILED``, or ``AGENT_RECURSION`` rethrown) or
    with a ``cause``. A refusal, or a failure of its own, is an origin.

    Example:
        >>> inner = Call("i2", "i1", "refunds", "error", ErrorInfo(code="TIMEOUT"))
        >>> outer = Call("i1", None, "billing", "error", ErrorInfo(code="AGENT_FAILED"))
        >>> failure_role(outer, [inner]), failure_role(inner, []), failure_role(outer, [])
        ('wrapped', 'origin', 'origin')
    """
    if not call.failed:
        return None
    if call.status == "refused" or not failed_children:
        return "origin"
    error = call.error
    if error is not None and (error.code in WRAPPER_CODES or error.cause is not None):
        return "wrapped"
    return "origin"


def failure_roles(calls: Sequence[Call]) -> dict[str, Role]:
    """The role of every failed invocation of one run, by invocation id."""
    below = _failed_children(calls)
    roles: dict[str, Role] = {}
    for call in calls:
        role = failure_role(call, below.get(call.invocation_id, ()))
        if role is not None:
            roles[call.invocation_id] = role
    return roles


def _pick(candidates: Sequence[Call], error: ErrorInfo | None) -> Call:
    """The failed call that ``error`` came from: its cause, the same circle, or the last to end."""
    if error is not None:
        for wanted in (error.cause, error):
            same = [c for c in candidates if wanted is not None and c.error == wanted]
            if same:
                return same[-1]
        if error.code == RECURSION:
            circles = [c for c in candidates if c.code == RECURSION]
            candidates = circles or candidates
    return max(candidates, key=lambda c: -1.0 if c.end_ms is None else c.end_ms)


def failing_origin(run: RunFacts) -> Call | None:
    """The invocation where the run's failure began, or None if no call of the root failed.

    From the failed call the root made (the one whose error the run ended
    with, else the last to end), go down while the call only wrapped a
    callee's failure, each time to the callee its error came from. When no
    call of the root failed but the run ended with an error, the failure was
    handed on: it is picked among every failed call the same way.
    """
    below = _failed_children(run.calls)
    top = below.get(None)
    if not top:
        # A handoff passes control on: the agent that raised may hang below
        # callers that had already ended ok (OpenAI Agents, ADK, Strands).
        top = [c for c in run.calls if c.failed] if run.error is not None else []
        if not top:
            return None
    call = _pick(top, run.error)
    while failure_role(call, below.get(call.invocation_id, ())) == "wrapped":
        call = _pick(below[call.invocation_id], call.error)
    return call


def _first_origin(run: RunFacts) -> Call | None:
    """For a run that ended ok: the handled failure to show (a circle first, else the first)."""
    below = _failed_children(run.calls)
    origins = [c for c in run.calls if failure_role(c, below.get(c.invocation_id, ())) == "origin"]
    if not origins:
        return None
    circles = [c for c in origins if c.code == RECURSION]
    return min(circles or origins, key=lambda c: float("inf") if c.end_ms is None else c.end_ms)


def _circle(run: RunFacts, origin: Call | None, error: ErrorInfo | None) -> str | None:
    """The circle of a failure: tracekit's ``chain``, else the loop its origin refused."""
    if error is not None and error.code == RECURSION:
        return canonical_circle(error.chain) if error.chain else None
    if origin is None or not loop_refusal(error):
        return None
    return path_circle(agent_path(run, origin))


def _finding(outcome: Outcome, origin: Call | None, run: RunFacts) -> Finding:
    error = origin.error if origin is not None else run.error
    chain = error.chain if error is not None and error.code == RECURSION else None
    cause = innermost(error)
    return Finding(
        outcome=outcome,
        circle=_circle(run, origin, error),
        origin=origin,
        origin_agent=origin.agent if origin is not None else (chain[-1] if chain else run.agent),
        origin_code=cause.code if cause is not None else None,
    )


# --- the rules, in order ----------------------------------------------------------


def incomplete(run: RunFacts) -> Finding | None:
    """No ``run.end``: the run crashed or is still running."""
    return None if run.has_end else Finding("incomplete")


def cancelled(run: RunFacts) -> Finding | None:
    """The run ended cancelled (its error is ``CANCELLED``, or only cancelled calls ended badly)."""
    if run.ok:
        return None
    if run.error is not None and run.error.code == CANCELLED:
        return Finding("cancelled")
    quiet = not any(c.failed for c in run.calls)
    if run.error is None and quiet and any(c.status == "cancelled" for c in run.calls):
        return Finding("cancelled")
    return None


def recursion(run: RunFacts) -> Finding | None:
    """The failure began with a refused loop: a circle of agents.

    Either tracekit's ``AGENT_RECURSION``, or, from any app, an error that
    refuses a loop (:func:`loop_refusal`: a guard's, or a depth or step
    limit's) raised where the failing path already holds its agent: the
    same agent twice on the path from the root down to the origin; or,
    for a guard that refused in the caller, the loop its message names
    closing on the failing path (:func:`named_circle`).
    """
    if run.ok:
        return None
    origin = failing_origin(run)
    code = origin.code if origin is not None else run.error.code if run.error else None
    if code == RECURSION:
        return _finding("failed:recursion", origin, run)
    if origin is None or not loop_refusal(origin.error):
        return None
    finding = _finding("failed:recursion", origin, run)
    if finding.circle is None:  # a guard in the caller: the refused agent never opened a span
        circle = named_circle(origin.error, agent_path(run, origin))
        finding = replace(finding, circle=circle)
    return finding if finding.circle else None


def limit_loop(run: RunFacts) -> Finding | None:
    """A framework's limit stopped the run while its activations went round a circle.

    The limit may be raised anywhere (:func:`~tracekit.failures.limits.limit_hit`:
    the last agent, a usage counter, the runner, the root); the circle is the
    one the run's sequence of activations repeats
    (:func:`~tracekit.failures.sequence.sequence_cycle`), though every agent
    in it handed on and ended ok. A limit with no revisit is no circle.

    Example:
        >>> calls = tuple(Call(f"i{n}", f"i{n - 1}" if n else None, a, "ok", start_ms=n)
        ...               for n, a in enumerate(["triage", "billing", "triage"]))
        >>> run = RunFacts("r", "LangGraph", True, False, ErrorInfo(code="GraphRecursionError"),
        ...                sequence=calls)
        >>> f = limit_loop(run)
        >>> f.outcome, f.circle, f.origin_agent, f.origin_code, f.loop.stopped
        ('failed:recursion', 'billing -> triage -> billing', 'triage', 'GraphRecursionError', 'limit')
    """
    if run.ok:
        return None
    return limit_finding("failed:recursion", run, "limit")


def limit_stop(run: RunFacts) -> Finding | None:
    """The run ended ok, but a limit cut its circle of activations off, or the app handled it.

    A framework that stops at a limit without raising (a termination
    condition, a step budget), or an app that caught the limit and returned,
    leaves a run that never reached its goal: ``degraded``, with the circle,
    the limit as its code and the agent where it stopped, never ``ok``.
    """
    if not run.ok:
        return None
    return limit_finding("degraded", run, "silent")


def refused(run: RunFacts) -> Finding | None:
    """The failure began with a refused call (depth, allow-list, registry, input)."""
    if run.ok:
        return None
    origin = failing_origin(run)
    cause = innermost(origin.error if origin is not None else run.error)
    is_refusal = (origin is not None and origin.status == "refused") or (
        cause is not None and cause.code in REFUSAL_CODES
    )
    return _finding("failed:refused", origin, run) if is_refusal else None


def child(run: RunFacts) -> Finding | None:
    """Any other failure: a delegated agent threw (or the root itself did)."""
    return None if run.ok else _finding("failed:child", failing_origin(run), run)


def degraded(run: RunFacts) -> Finding | None:
    """Ended ok, but an invocation inside failed or was refused and was handled."""
    if not any(c.failed for c in run.calls):
        return None
    return _finding("degraded", _first_origin(run), run)


def failed_step(run: RunFacts) -> Finding | None:
    """Ended ok with no invocation failed, but a step (a tool or model call) failed.

    The agent caught the step's error and went on: the run looked fine but
    something failed inside, so it is ``degraded``, its origin the first
    failed step's agent (the invocation it is a step of; None for the root
    agent's own step) and its code the step's own.

    Example:
        >>> step = FailedStep("refund_api", "i1", "refunds", ErrorInfo(code="RefundTimeout"), 3.0)
        >>> f = failed_step(RunFacts("r", "desk", True, True, failed_steps=(step,)))
        >>> f.outcome, f.origin_agent, f.origin_code, f.origin_step, f.origin.invocation_id
        ('degraded', 'refunds', 'RefundTimeout', 'refund_api', 'i1')
    """
    if not run.ok or not run.failed_steps:
        return None
    first = min(run.failed_steps, key=_step_order)
    origin = None
    if first.invocation_id is not None:  # the invocation ended ok: only its id and agent matter
        origin = Call(first.invocation_id, None, first.agent or "?", "ok", first.error)
    return Finding(
        outcome="degraded",
        origin=origin,
        origin_agent=first.agent,
        origin_code=first.error.code if first.error is not None else None,
        origin_step=first.step,
    )


def _step_order(step: FailedStep) -> tuple[float, str, str]:
    return (float("inf") if step.ts_ms is None else step.ts_ms, step.invocation_id or "", step.step)


def ok(run: RunFacts) -> Finding | None:
    """Everything else ended ok."""
    return Finding("ok")


#: The rules in the order they are tried; the first finding wins.
RULES: Final[tuple[Rule, ...]] = (
    incomplete,
    cancelled,
    recursion,
    limit_loop,
    refused,
    child,
    limit_stop,
    degraded,
    failed_step,
    ok,
)


def classify_run(
    run: RunFacts, rules: Sequence[Rule] = RULES, *, loop_min: int = LOOP_MIN
) -> Finding:
    """Apply the rules in order and return the first finding, with its loop.

    A run stopped at a circle carries that loop (:attr:`Finding.loop`): a
    limit's, or a refusal's on the call path. A run that finished (``ok`` or
    ``degraded``) whose activations went round a circle ``loop_min`` times or
    more carries a ``finished`` loop (a loop finding), its class unchanged
    (:func:`~tracekit.failures.loops.with_loop`).

    Example:
        >>> classify_run(RunFacts("r", "desk", has_end=False, ok=None)).outcome
        'incomplete'
    """
    for rule in rules:
        finding = rule(run)
        if finding is not None:
            return with_loop(run, finding, loop_min)
    raise AssertionError("the last rule, ok, always finds")  # pragma: no cover
