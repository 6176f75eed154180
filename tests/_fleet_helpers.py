"""Hand-made traces for the fleet tests: each run class built from plain records."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.events import Enter, ErrorInfo, Event, Exit, Node, RunEnd, RunStart, encode_event

T0 = 1_767_600_000_000.0  # 2026-01-05T08:00:00Z


@dataclass
class C:
    """One call in a hand-made tree: the agent, how it ended, and its own calls."""

    agent: str
    calls: list[C] = field(default_factory=list)
    status: str = "ok"
    error: ErrorInfo | None = None
    exits: bool = True
    #: its own tool calls before its callees: name and error (None: the tool ended ok)
    tools: list[tuple[str, ErrorInfo | None]] = field(default_factory=list)


def err(code: str, cause: ErrorInfo | None = None, chain: list[str] | None = None) -> ErrorInfo:
    return ErrorInfo(code=code, message=f"{code.lower()} happened", cause=cause, chain=chain)


def wrap(inner: ErrorInfo) -> ErrorInfo:
    """How a caller fails when its callee did: AGENT_FAILED with the callee's error as cause."""
    return ErrorInfo(code="AGENT_FAILED", message="delegated agent failed", cause=inner)


def run_events(
    run_id: str,
    agent: str,
    calls: list[C],
    *,
    end: dict[str, Any] | None,
    service: str = "desk-svc",
    t0: float = T0,
    tools: Sequence[tuple[str, ErrorInfo | None]] = (),
) -> list[Event]:
    """Records of one root run; ``end`` holds run.end's fields (None: the run never ended).

    ``tools`` are the root agent's own tool calls (name and error, None for ok).
    """
    clock = itertools.count(int(t0))
    ids = itertools.count(1)
    events: list[Event] = [RunStart(ts=next(clock), runId=run_id, agent=agent, service=service)]

    def emit(call: C, parent_run: str) -> None:
        n = next(ids)
        inv, child_run = f"{run_id}-i{n}", f"{run_id}/{n}"
        start = next(clock)
        common = dict(
            invocationId=inv,
            runId=child_run,
            parentRunId=parent_run,
            agent=call.agent,
            node="delegate",
            service=service,
        )
        events.append(Enter(ts=start, **common))
        emit_tools(call.tools, child_run)
        for inner in call.calls:
            emit(inner, child_run)
        if call.exits:
            stop = next(clock)
            events.append(
                Exit(
                    ts=stop, durationMs=stop - start, status=call.status, error=call.error, **common
                )
            )  # type: ignore[arg-type]

    def emit_tools(tools: list[tuple[str, ErrorInfo | None]], run: str) -> None:
        for name, error in tools:
            events.append(
                Node(
                    ts=next(clock),
                    runId=run,
                    id=f"act/{name}",
                    call="tool",
                    error=error,
                    ok=error is None,
                )
            )

    emit_tools(list(tools), run_id)
    for call in calls:
        emit(call, run_id)
    if end is not None:
        events.append(RunEnd(ts=next(clock), runId=run_id, service=service, **end))
    return events


def write(path: Path, events: list[Event]) -> Path:
    path.write_bytes(b"".join(encode_event(e) + b"\n" for e in events))
    return path


def recursion(run_id: str, circle: list[str], **kw: Any) -> list[Event]:
    """desk -> circle[0] -> ... -> circle[0] again, refused; rethrown unchanged at every level."""
    chain = [*circle, circle[0]]
    error = err("AGENT_RECURSION", chain=chain)
    call = C(chain[-1], status="refused", error=error)
    for agent in reversed(circle):
        call = C(agent, [call], status="error", error=error)
    return run_events(
        run_id,
        "desk",
        [C("intake"), call],
        end={"ok": False, "failure": "delegation", "error": error},
        **kw,
    )


def deep_failure(run_id: str, **kw: Any) -> list[Event]:
    """desk -> billing -> refunds -> invoices (TIMEOUT), wrapped twice on its way up."""
    inner = err("TIMEOUT")
    refunds = wrap(inner)
    billing = wrap(refunds)
    tree = C(
        "billing",
        [
            C("lookup"),
            C(
                "refunds",
                [C("invoices", status="error", error=inner)],
                status="error",
                error=refunds,
            ),
        ],
        status="error",
        error=billing,
    )
    return run_events(
        run_id, "desk", [tree], end={"ok": False, "failure": "agent", "error": billing}, **kw
    )


def handled(run_id: str, **kw: Any) -> list[Event]:
    """billing catches refunds' failure and answers anyway: the run is degraded."""
    tree = C("billing", [C("refunds", status="error", error=err("RATE_LIMITED"))])
    return run_events(run_id, "desk", [tree, C("reply")], end={"ok": True}, **kw)


def crashed(run_id: str, **kw: Any) -> list[Event]:
    """The process died inside billing: an enter without exit, no run.end."""
    return run_events(
        run_id,
        "desk",
        [C("intake"), C("billing", [C("refunds", exits=False)], exits=False)],
        end=None,
        **kw,
    )


def refused(run_id: str, **kw: Any) -> list[Event]:
    """billing asks for payments, which is not registered; billing fails with it."""
    no = err("AGENT_NOT_REGISTERED")
    tree = C("billing", [C("payments", status="refused", error=no)], status="error", error=wrap(no))
    return run_events(
        run_id, "desk", [tree], end={"ok": False, "failure": "agent", "error": wrap(wrap(no))}, **kw
    )


def cancelled(run_id: str, **kw: Any) -> list[Event]:
    stop = ErrorInfo(code="CANCELLED", message="cancelled by the user")
    return run_events(
        run_id, "desk", [C("billing", status="cancelled")], end={"ok": False, "error": stop}, **kw
    )


def healthy(run_id: str, **kw: Any) -> list[Event]:
    return run_events(
        run_id, "desk", [C("billing", [C("refunds")]), C("reply")], end={"ok": True}, **kw
    )


def own_failure_after_handled(run_id: str, **kw: Any) -> list[Event]:
    """billing handles refunds' failure, then fails on its own: billing is the origin."""
    own = err("TOOL_ERROR")
    tree = C(
        "billing", [C("refunds", status="error", error=err("TIMEOUT"))], status="error", error=own
    )
    return run_events(
        run_id, "desk", [tree], end={"ok": False, "failure": "agent", "error": wrap(own)}, **kw
    )


#: Every hand-made run and what the classification must find.
CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "rec2": (
        lambda r, **kw: recursion(r, ["orders", "billing"], **kw),
        {
            "outcome": "failed:recursion",
            "circle": "billing -> orders -> billing",
            "origin_agent": "orders",
            "origin_code": "AGENT_RECURSION",
            "origin_invocation_id": "rec2-i4",
        },
    ),
    "rec3": (
        lambda r, **kw: recursion(r, ["writer", "critic", "planner"], **kw),
        {
            "outcome": "failed:recursion",
            "circle": "critic -> planner -> writer -> critic",
            "origin_agent": "writer",
            "origin_code": "AGENT_RECURSION",
            "origin_invocation_id": "rec3-i5",
        },
    ),
    "deep": (
        deep_failure,
        {
            "outcome": "failed:child",
            "circle": None,
            "origin_agent": "invoices",
            "origin_code": "TIMEOUT",
            "origin_invocation_id": "deep-i4",
        },
    ),
    "handled": (
        handled,
        {
            "outcome": "degraded",
            "origin_agent": "refunds",
            "origin_code": "RATE_LIMITED",
            "origin_invocation_id": "handled-i2",
        },
    ),
    "crash": (crashed, {"outcome": "incomplete", "origin_agent": None}),
    "refused": (
        refused,
        {
            "outcome": "failed:refused",
            "origin_agent": "payments",
            "origin_code": "AGENT_NOT_REGISTERED",
            "origin_invocation_id": "refused-i2",
        },
    ),
    "cancel": (cancelled, {"outcome": "cancelled", "origin_agent": None}),
    "fine": (healthy, {"outcome": "ok", "circle": None, "origin_agent": None}),
    "own": (
        own_failure_after_handled,
        {
            "outcome": "failed:child",
            "origin_agent": "billing",
            "origin_code": "TOOL_ERROR",
            "origin_invocation_id": "own-i1",
        },
    ),
}


def tool_handled(run_id: str, **kw: Any) -> list[Event]:
    """refunds' tool times out; refunds catches it and answers: only a step failed."""
    deep = C("refunds", tools=[("lookup", None), ("refund_api", err("TIMEOUT"))])
    return run_events(run_id, "desk", [C("billing", [deep])], end={"ok": True}, **kw)


def root_tool_handled(run_id: str, **kw: Any) -> list[Event]:
    """The root agent's own tool fails twice (the first is the origin); it goes on."""
    tools = [("search", err("RATE_LIMITED")), ("search", err("RATE_LIMITED2"))]
    return run_events(run_id, "desk", [C("billing")], end={"ok": True}, tools=tools, **kw)


def tool_and_call_handled(run_id: str, **kw: Any) -> list[Event]:
    """A tool fails in billing and refunds fails, both handled: the failed invocation is the origin."""
    tree = C(
        "billing",
        [C("refunds", status="error", error=err("TIMEOUT"))],
        tools=[("ledger", err("LEDGER"))],
    )
    return run_events(run_id, "desk", [tree], end={"ok": True}, **kw)


def tool_failed_run(run_id: str, **kw: Any) -> list[Event]:
    """billing's tool fails and the root fails on its own: a child failure, no step origin."""
    own = err("VALUE_ERROR")
    tree = C("billing", tools=[("ledger", err("LEDGER"))])
    return run_events(
        run_id, "desk", [tree], end={"ok": False, "failure": "agent", "error": own}, **kw
    )


#: Runs whose failure is a failed step (a tool call) and what the classification must find.
STEP_CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "toolhandled": (
        tool_handled,
        {
            "outcome": "degraded",
            "origin_agent": "refunds",
            "origin_code": "TIMEOUT",
            "origin_invocation_id": "toolhandled-i2",
            "origin_step": "refund_api",
        },
    ),
    "roottool": (
        root_tool_handled,
        {
            "outcome": "degraded",
            "origin_agent": "desk",
            "origin_code": "RATE_LIMITED",
            "origin_invocation_id": None,
            "origin_step": "search",
        },
    ),
    "toolandcall": (
        tool_and_call_handled,
        {
            "outcome": "degraded",
            "origin_agent": "refunds",
            "origin_code": "TIMEOUT",
            "origin_invocation_id": "toolandcall-i2",
            "origin_step": None,
        },
    ),
    "toolfailedrun": (
        tool_failed_run,
        {
            "outcome": "failed:child",
            "origin_agent": "desk",
            "origin_code": "VALUE_ERROR",
            "origin_step": None,
        },
    ),
}


#: failure_role of each failed invocation of the hand-made runs (the rest have none).
ROLES: dict[str, str] = {
    "rec2-i2": "wrapped", "rec2-i3": "wrapped", "rec2-i4": "origin",
    "rec3-i2": "wrapped", "rec3-i3": "wrapped", "rec3-i4": "wrapped", "rec3-i5": "origin",
    "deep-i1": "wrapped", "deep-i3": "wrapped", "deep-i4": "origin",
    "handled-i2": "origin",
    "refused-i1": "wrapped", "refused-i2": "origin",
    "own-i1": "origin", "own-i2": "origin",
}  # fmt: skip


def all_cases(**kw: Any) -> list[Event]:
    events: list[Event] = []
    for run_id, (build, _) in CASES.items():
        events += build(run_id, **kw)
    return events


HOSTILE = "<script>alert(1)</script>"
ANSI = "red\x1b[31malert"
MARKUP = "[bold red]loud[/bold red]"


def hostile_run(run_id: str, **kw: Any) -> list[Event]:
    """A circle through agents whose names are an HTML script, an ANSI escape and rich markup."""
    chain = [HOSTILE, ANSI, HOSTILE]
    error = err("AGENT_RECURSION", chain=chain)
    tree = C(
        HOSTILE,
        [C(ANSI, [C(HOSTILE, status="refused", error=error)], status="error", error=error)],
        status="error",
        error=error,
    )
    calls = [C(MARKUP), tree]
    return run_events(
        run_id, MARKUP, calls, end={"ok": False, "failure": "delegation", "error": error}, **kw
    )
