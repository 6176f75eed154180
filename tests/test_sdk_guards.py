"""The guards behave as the seeds say: refusals, recursion, depth, AGENT_FAILED."""

from __future__ import annotations

import pytest

from tracekit.errors import (
    AgentDepthExceededError,
    AgentFailedError,
    AgentInvalidNameError,
    AgentNotAllowedError,
    AgentNotRegisteredError,
    AgentPendingError,
    AgentRecursionError,
)
from tracekit.events import Enter, Exit, RunEnd
from tracekit.sdk import AgentTracer, Guards, MemorySink
from tracekit.sdk.guards import check_call

DESKS = ("sql", "documents", "general")


def _tracer(**guards: object) -> tuple[AgentTracer, MemorySink]:
    sink = MemorySink()
    return AgentTracer(sink, guards=Guards(**guards)), sink  # type: ignore[arg-type]


def _exits(sink: MemorySink) -> dict[str, Exit]:
    return {e.agent: e for e in sink.events if isinstance(e, Exit)}


def test_recursion_is_refused_and_travels_up_unchanged() -> None:
    tk, sink = _tracer()
    with pytest.raises(AgentRecursionError) as caught, tk.run("orders"):
        with tk.delegate("billing"), tk.delegate("orders"):
            raise AssertionError("the refused agent must not run")
    err = caught.value
    assert err.chain == ["orders", "billing", "orders"]
    assert str(err) == "orders -> billing -> orders" and err.__cause__ is None
    refused = [e for e in sink.events if isinstance(e, Exit) and e.status == "refused"]
    assert len(refused) == 1 and refused[0].agent == "orders"
    assert refused[0].error is not None and refused[0].error.chain == err.chain
    billing = _exits(sink)["billing"]
    assert billing.status == "error" and billing.error is not None
    assert billing.error.code == "AGENT_RECURSION" and billing.error.cause is None
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and not end.ok and end.failure == "delegation"
    assert end.error is not None and end.error.chain == ["orders", "billing", "orders"]


def test_child_failure_is_wrapped_at_each_level_with_cause() -> None:
    tk, sink = _tracer()
    original = ValueError("card declined")
    with pytest.raises(AgentFailedError) as caught, tk.run("front_desk"):
        with tk.handoff("billing", node="hand_over"), tk.delegate("refunds", node="escalate"):
            raise original
    outer = caught.value
    assert outer.code == "AGENT_FAILED" and "billing" in str(outer)
    inner = outer.__cause__
    assert isinstance(inner, AgentFailedError) and "refunds" in str(inner)
    assert inner.__cause__ is original
    exits = _exits(sink)
    refunds, billing = exits["refunds"].error, exits["billing"].error
    assert refunds is not None and billing is not None
    assert refunds.code == "AGENT_FAILED" and refunds.cause is not None
    assert refunds.cause.code == "ValueError" and refunds.cause.message == "card declined"
    assert billing.code == "AGENT_FAILED" and billing.cause == refunds
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.failure == "agent"


def test_depth_limit() -> None:
    tk, sink = _tracer(max_depth=2)
    with pytest.raises(AgentFailedError) as caught, tk.run("a"):
        with tk.delegate("b"), tk.delegate("c"), tk.delegate("d"):
            pass
    refusal = caught.value.__cause__
    assert isinstance(refusal, AgentFailedError)
    assert isinstance(refusal.__cause__, AgentDepthExceededError)
    exits = _exits(sink)
    assert exits["d"].status == "refused" and exits["d"].error is not None
    assert exits["d"].error.code == "AGENT_DEPTH_EXCEEDED"
    assert exits["c"].status == "error"


@pytest.mark.parametrize(
    ("agent", "error", "code"),
    [
        ("payments", AgentNotAllowedError, "AGENT_NOT_ALLOWED"),
        ("documents", AgentNotRegisteredError, "AGENT_NOT_REGISTERED"),
        ("../sql", AgentInvalidNameError, "AGENT_INVALID_NAME"),
        ("sql\x1b[31m", AgentInvalidNameError, "AGENT_INVALID_NAME"),
    ],
)
def test_refusals_by_name(agent: str, error: type[Exception], code: str) -> None:
    tk, sink = _tracer(registry={"sql", "general", "payments"})
    with tk.run("orchestrator"), pytest.raises(error) as caught:
        with tk.delegate(agent, node="delegate", allowed=DESKS):
            raise AssertionError("must not run")
    assert caught.value.code == code  # type: ignore[attr-defined]
    enter = next(e for e in sink.events if isinstance(e, Enter))
    exit_ = _exits(sink)[agent]
    assert enter.agent == agent and exit_.status == "refused" and not exit_.ok
    assert exit_.error is not None and exit_.error.code == code
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and end.ok  # the caller handled it


def test_allow_list_applies_without_guards() -> None:
    sink = MemorySink()
    tk = AgentTracer(sink)
    with pytest.raises(AgentNotAllowedError, match="payments"), tk.run("o"):
        with tk.delegate("payments", allowed=DESKS):
            pass


def test_pending_travels_up_unwrapped() -> None:
    tk, sink = _tracer()
    with pytest.raises(AgentPendingError), tk.run("supervisor"):
        with tk.delegate("tickets"), tk.delegate("refunds"):
            raise AgentPendingError("refund over 100 EUR needs approval")
    assert {e.agent: e.status for e in sink.events if isinstance(e, Exit)} == {
        "refunds": "pending",
        "tickets": "pending",
    }
    end = sink.events[-1]
    assert isinstance(end, RunEnd) and not end.ok and end.failure is None


def test_check_order_follows_the_seed() -> None:
    guards = Guards(registry={"orders"}, max_depth=1)
    # not allowed beats not registered; recursion beats depth
    assert check_call(guards, "x", (), 1, ["sql"]).code == "AGENT_NOT_ALLOWED"  # type: ignore[union-attr]
    assert check_call(guards, "orders", ("orders",), 5, None).code == "AGENT_RECURSION"  # type: ignore[union-attr]
    assert check_call(guards, "orders", ("root",), 2, None).code == "AGENT_DEPTH_EXCEEDED"  # type: ignore[union-attr]
    assert check_call(guards, "orders", ("root",), 1, ["orders"]) is None
