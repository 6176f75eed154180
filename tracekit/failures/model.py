"""What the rules take and give: a run's facts (:class:`RunFacts`: its calls and
failed steps) and a :class:`Finding`; the codes they read (no rules here).

Example:
    >>> Call("i1", None, "refunds", "refused").failed
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from tracekit.events import ErrorInfo
from tracekit.failures.outcomes import Outcome

__all__ = [
    "CANCELLED",
    "FAILED_STATUSES",
    "RECURSION",
    "REFUSAL_CODES",
    "WRAPPER_CODES",
    "Call",
    "FailedStep",
    "Finding",
    "Loop",
    "Role",
    "Rule",
    "RunFacts",
    "Stopped",
]

Role: TypeAlias = Literal["origin", "wrapped"]
#: How a loop of agents ended: a limit raised, cut off silently (or a limit the
#: app handled), refused on the call path, or it ran and finished.
Stopped: TypeAlias = Literal["limit", "silent", "refused", "finished"]

RECURSION: Final = "AGENT_RECURSION"
CANCELLED: Final = "CANCELLED"
#: The codes of a call refused before the child ran (the seed's four checks, and input).
REFUSAL_CODES: Final = frozenset(
    {
        "AGENT_DEPTH_EXCEEDED",
        "AGENT_NOT_ALLOWED",
        "AGENT_NOT_REGISTERED",
        "AGENT_INVALID_NAME",
        "AGENT_INPUT_INVALID",
    }
)
#: Codes a caller fails with because a callee did: the failure is the callee's.
WRAPPER_CODES: Final = frozenset({"AGENT_FAILED", RECURSION})
#: An invocation that did not work: it threw, or was refused.
FAILED_STATUSES: Final = frozenset({"error", "refused"})


@dataclass(frozen=True, slots=True)
class Call:
    """One agent invocation, as the rules see it.

    Attributes:
        invocation_id: its id.
        parent_invocation_id: the invocation whose run made this call; None
            for a call the root run made.
        agent: the agent called.
        status: ok | error | refused | cancelled | pending | running.
        error: the exit's error, causes nested.
        end_ms: when it ended, if it did.
        start_ms: when it started (the order of a run's activations).
        kind: how it was called: ``delegate`` (its caller waits and goes on
            when it returns), ``handoff`` (control passed on), ``subagent``.
    """

    invocation_id: str
    parent_invocation_id: str | None
    agent: str
    status: str
    error: ErrorInfo | None = None
    end_ms: float | None = None
    start_ms: float | None = None
    kind: str | None = None

    @property
    def failed(self) -> bool:
        """It threw or was refused (a cancelled call did not fail)."""
        return self.status in FAILED_STATUSES

    @property
    def code(self) -> str | None:
        """The code it exited with, if any."""
        return self.error.code if self.error is not None else None


@dataclass(frozen=True, slots=True)
class FailedStep:
    """A step of an agent (a tool or model call) that failed, as the rules see it.

    Attributes:
        step: the step's name (the last part of its id).
        invocation_id: the invocation it is a step of; None for a step of the
            root agent itself.
        agent: that invocation's agent (the root agent's for a root step).
        error: the step's error (its code is the step's own).
        ts_ms: when it started.
    """

    step: str
    invocation_id: str | None
    agent: str | None
    error: ErrorInfo | None = None
    ts_ms: float | None = None


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the rules know about one root run.

    Attributes:
        run_id: the root run.
        agent: its entry agent, when a ``run.start`` named it.
        has_end: a ``run.end`` was seen.
        ok: ``run.end``'s ok (None without an end).
        error: ``run.end``'s error, causes nested.
        calls: its invocations, every level (the rules look only at those
            that failed or were cancelled, so a caller may pass just those).
        failed_steps: the steps of any level that failed (``ok`` false).
        sequence: every invocation of the run, whatever its status (the
            activations, in any order: the rules order them by start). A
            caller may leave it empty when no agent is activated twice (the
            root agent counted): no circle of agents can form then.
    """

    run_id: str
    agent: str | None
    has_end: bool
    ok: bool | None
    error: ErrorInfo | None = None
    calls: tuple[Call, ...] = ()
    failed_steps: tuple[FailedStep, ...] = ()
    sequence: tuple[Call, ...] = ()


@dataclass(frozen=True, slots=True)
class Loop:
    """A circle of agents a run went round, and how it ended (a row of the store's ``loops``).

    Attributes:
        circle: the canonical circle (``"billing -> triage -> billing"``).
        revisits: how many times the run went round it (1: the circle
            closed once).
        stopped: ``limit`` (a framework's limit raised), ``silent`` (cut off
            at a limit without a raise, or a limit the app handled),
            ``refused`` (a guard refused the call that closed it, on the call
            path), ``finished`` (it ran and the run ended).
        limit_code: the limit's code (``GraphRecursionError``, ``MaxTurnsExceeded``).
        origin_agent: where it stopped (the run's origin agent).
        members: the activations inside the circle, from its first entry to
            the end of the last (invocation ids; None for the root agent's
            own activation): what its cost is summed over.
    """

    circle: str
    revisits: int
    stopped: Stopped
    limit_code: str | None = None
    origin_agent: str | None = None
    members: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """A run's class and, when something failed, where and why.

    Attributes:
        outcome: one of :data:`OUTCOMES`.
        circle: the canonical recursion circle (``"a -> b -> a"``).
        origin: the invocation where the failure began (None when the trace
            has no failed invocation for it: the root itself failed).
        origin_agent: the agent that failed first.
        origin_code: the code it began with (the innermost cause).
        origin_step: the step whose failure it was, when no invocation failed
            (a tool or model call that raised under an agent that went on).
        loop: the circle the run went round, when it stopped at one or went
            round one often enough to be worth a look (a loop finding).
    """

    outcome: Outcome
    circle: str | None = None
    origin: Call | None = field(default=None, compare=False)
    origin_agent: str | None = None
    origin_code: str | None = None
    origin_step: str | None = None
    loop: Loop | None = None


Rule: TypeAlias = Callable[[RunFacts], "Finding | None"]
