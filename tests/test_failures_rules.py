"""The classification rules, one by one and in order, on hand-made runs and a simulated fleet."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from _fleet_helpers import CASES, ROLES, STEP_CASES, all_cases, recursion
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.events import ErrorInfo
from tracekit.failures import (
    RULES,
    Call,
    FailedStep,
    RunFacts,
    canonical_circle,
    classify_events,
    classify_run,
    failing_origin,
    failure_role,
    failure_roles,
    incomplete_state,
    run_facts,
)
from tracekit.failures.limits import limit_hit
from tracekit.failures.rules import STALE_AFTER_MS, innermost
from tracekit.failures.sequence import activation_sequence
from tracekit.intake import read_trace
from tracekit.simulation.simulator import simulate


def _got(finding) -> dict:
    return {
        "outcome": finding.outcome,
        "circle": finding.circle,
        "origin_agent": finding.origin_agent,
        "origin_code": finding.origin_code,
        "origin_invocation_id": finding.origin.invocation_id if finding.origin else None,
        "origin_step": finding.origin_step,
    }


@pytest.mark.parametrize("run_id", sorted(CASES))
def test_each_hand_made_run_gets_its_class(run_id: str) -> None:
    build, expected = CASES[run_id]
    found = classify_events(build(run_id))[run_id]
    got = _got(found)
    assert {k: got[k] for k in expected} == expected


@pytest.mark.parametrize("run_id", sorted(STEP_CASES))
def test_a_failed_step_counts_only_when_nothing_else_failed(run_id: str) -> None:
    build, expected = STEP_CASES[run_id]
    got = _got(classify_events(build(run_id))[run_id])
    assert {k: got[k] for k in expected} == expected


_CODES = st.sampled_from(["TIMEOUT", "RateLimitError", "KeyError"])


@st.composite
def _steps(draw: st.DrawFn, invocations: list[str]) -> tuple[FailedStep, ...]:
    """Failed steps of the root agent (None) or of some invocations, at distinct times."""
    owners = draw(st.lists(st.sampled_from([None, *invocations]), max_size=4))
    times = draw(
        st.lists(st.integers(0, 1000), min_size=len(owners), max_size=len(owners), unique=True)
    )
    return tuple(
        FailedStep(f"tool{t}", owner, owner or "desk", ErrorInfo(code=draw(_CODES)), float(t))
        for owner, t in zip(owners, times, strict=True)
    )


@st.composite
def _runs_with_steps(draw: st.DrawFn) -> RunFacts:
    """A root run (ended ok, failed, or not ended) with some failed calls and failed steps."""
    n = draw(st.integers(0, 4))
    calls = tuple(
        Call(f"i{k}", f"i{k - 1}" if k and draw(st.booleans()) else None, f"a{k}",
             draw(st.sampled_from(["ok", "ok", "error", "refused"])), ErrorInfo(code=draw(_CODES)),
             float(k))
        for k in range(n)
    )  # fmt: skip
    end = draw(st.sampled_from([True, False, None]))
    error = ErrorInfo(code="AGENT_FAILED") if end is False else None
    steps = draw(_steps([c.invocation_id for c in calls]))
    return RunFacts("r", "desk", end is not None, end, error, calls, steps)


@given(_runs_with_steps(), st.randoms())
def test_failed_steps_decide_only_a_run_that_ended_ok_with_no_failed_call(
    run: RunFacts, rnd: object
) -> None:
    found = classify_run(run)
    without = classify_run(
        RunFacts(run.run_id, run.agent, run.has_end, run.ok, run.error, run.calls)
    )
    shuffled = list(run.failed_steps)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert (
        classify_run(
            RunFacts(
                run.run_id, run.agent, run.has_end, run.ok, run.error, run.calls, tuple(shuffled)
            )
        )
        == found
    )  # the order the steps come in never matters
    if not run.failed_steps or not run.ok or any(c.failed for c in run.calls):
        assert found == without and found.origin_step is None
        return
    first = min(run.failed_steps, key=lambda s: s.ts_ms or 0.0)
    assert found.outcome == "degraded" and without.outcome == "ok"
    assert (found.origin_agent, found.origin_code, found.origin_step) == (
        first.agent, first.error.code if first.error else None, first.step,
    )  # fmt: skip
    assert (found.origin.invocation_id if found.origin else None) == first.invocation_id


def test_roles_origin_or_wrapped_for_every_failed_invocation() -> None:
    roles: dict[str, str] = {}
    for facts in run_facts(all_cases()):
        roles.update(failure_roles(facts.calls))
    assert roles == ROLES


def test_rules_run_in_order_first_finding_wins() -> None:
    names = [rule.__name__ for rule in RULES]
    assert names == [
        "incomplete",
        "cancelled",
        "recursion",
        "limit_loop",
        "refused",
        "child",
        "limit_stop",
        "degraded",
        "failed_step",
        "ok",
    ]
    # A run with no end is incomplete even if a circle was refused inside it.
    [facts] = run_facts(
        [e for e in recursion("r", ["a", "b"]) if e.__struct_config__.tag != "run.end"]
    )
    assert classify_run(facts).outcome == "incomplete"
    assert classify_run(facts, RULES[1:]).outcome == "failed:recursion"


def test_circle_is_the_same_however_entered() -> None:
    assert canonical_circle(["billing", "orders", "billing"]) == canonical_circle(
        ["orders", "billing", "orders"]
    )
    assert canonical_circle(["c", "a", "b", "c"]) == "a -> b -> c -> a"
    assert (
        canonical_circle(["a", "c", "b", "a"]) == "a -> c -> b -> a"
    )  # the other direction is another circle
    first = classify_events(recursion("x", ["orders", "billing"]))["x"].circle
    second = classify_events(recursion("y", ["billing", "orders"]))["y"].circle
    assert first == second == "billing -> orders -> billing"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=5, unique=True), st.integers(0, 4))
def test_circle_rotation_invariant_and_agrees_with_the_simulator(
    ring: list[str], turn: int
) -> None:
    turn %= len(ring)
    rotated = ring[turn:] + ring[:turn]
    assert canonical_circle([*ring, ring[0]]) == canonical_circle([*rotated, rotated[0]])


def test_origin_follows_the_cause_not_the_last_to_end() -> None:
    timeout = ErrorInfo(code="TIMEOUT")
    other = ErrorInfo(code="TOOL_ERROR")
    calls = (
        Call("top", None, "billing", "error", ErrorInfo(code="AGENT_FAILED", cause=timeout), 50.0),
        Call("a", "top", "refunds", "error", timeout, 10.0),
        Call(
            "b", "top", "invoices", "error", other, 40.0
        ),  # later, but not what billing failed with
    )
    run = RunFacts("r", "desk", has_end=True, ok=False, error=calls[0].error, calls=calls)
    origin = failing_origin(run)
    assert origin is not None and origin.invocation_id == "a"
    assert classify_run(run).origin_code == "TIMEOUT"


def test_role_of_a_call_that_failed_on_its_own_after_a_child_failed() -> None:
    child = Call("c", "p", "refunds", "error", ErrorInfo(code="TIMEOUT"))
    parent = Call("p", None, "billing", "error", ErrorInfo(code="TOOL_ERROR"))
    assert failure_role(parent, [child]) == "origin"
    assert failure_role(Call("q", None, "x", "ok"), []) is None
    assert failure_role(Call("q", None, "x", "cancelled"), []) is None


def test_innermost_and_incomplete_state() -> None:
    assert innermost(None) is None
    assert (
        innermost(ErrorInfo(code="A", cause=ErrorInfo(code="B", cause=ErrorInfo(code="C")))).code
        == "C"
    )
    assert incomplete_state(1000.0, 1000.0 + STALE_AFTER_MS + 1) == "crashed"
    assert incomplete_state(1000.0, 2000.0) == "running"
    assert incomplete_state(None, 0.0) == "crashed"


def test_root_that_failed_by_itself_is_a_child_failure_of_the_root_agent() -> None:
    run = RunFacts("r", "desk", has_end=True, ok=False, error=ErrorInfo(code="BOOM"))
    finding = classify_run(run)
    assert (finding.outcome, finding.origin_agent, finding.origin_code, finding.origin) == (
        "failed:child", "desk", "BOOM", None,
    )  # fmt: skip


def test_simulated_fleet_matches_its_recorded_truth(tmp_path: Path) -> None:
    fleet, truth = tmp_path / "fleet.jsonl", tmp_path / "truth.jsonl"
    simulate(fleet, runs=600, seed=21, truth=truth)
    found = classify_events(read_trace(fleet).events)
    seen: set[str] = set()
    for line in truth.read_text().splitlines():
        expected = json.loads(line)
        got = _got(found[expected["run_id"]])
        for key in ("outcome", "circle", "origin_invocation_id", "origin_agent", "origin_code"):
            if key in expected:
                assert got[key] == expected[key], (expected["run_id"], key)
        seen.add(expected["outcome"])
    assert len(found) == 600
    assert seen == {
        "ok",
        "degraded",
        "failed:recursion",
        "failed:child",
        "failed:refused",
        "cancelled",
        "incomplete",
    }


def test_a_guard_in_the_caller_is_a_circle_only_when_the_path_holds_the_loop_it_names() -> None:
    def run(message: str) -> tuple[str, str | None]:
        guard = ErrorInfo(code="LoopDetected", message=message)
        carried = ErrorInfo(code="LoopDetected", message=message, cause=guard)  # re-raised
        planner = Call("i1", None, "planner", "error", carried, 2.0)
        critic = Call("i2", "i1", "critic", "error", guard, 1.0)  # refused planner: no span
        found = classify_run(RunFacts("r", "desk", True, False, carried, (planner, critic)))
        return found.outcome, found.circle

    assert run("delegation loop: planner -> critic -> planner") == (
        "failed:recursion", "critic -> planner -> critic",
    )  # fmt: skip
    assert run("LoopDetected: desk → planner → critic → desk") == (
        "failed:recursion", "critic -> desk -> planner -> critic",
    )  # fmt: skip
    # a loop the failing path does not close, or no loop written out: a child failure
    assert run("delegation loop: writer -> critic -> writer") == ("failed:child", None)
    assert run("loop refused: planner was already running") == ("failed:child", None)


# --- circles from the sequence of activations, limits, loop findings ------------------

_RECORDINGS = sorted((Path(__file__).parent / "frameworks" / "recordings").glob("*/*.otlp.json"))
#: Every recorded framework run's facts that no limit stopped: the chains a cycle is spliced into.
_RECORDED = [
    facts
    for path in _RECORDINGS
    for facts in run_facts(read_trace(path).events)
    if limit_hit(facts) is None
]
_LIMITS = [
    ErrorInfo(code="GraphRecursionError", message="Recursion limit of 25 reached"),
    ErrorInfo(code="MaxTurnsExceeded", message="Max turns (10) exceeded"),
    ErrorInfo(code="UsageLimitExceeded", message="The next request would exceed the request_limit of 6"),
    ErrorInfo(code="AgentMaxStepsError", message="Reached max steps."),
    ErrorInfo(code="RuntimeError", message="Maximum number of turns 8 reached"),
]  # fmt: skip
_RING = st.lists(st.sampled_from(["loop_a", "loop_b", "loop_c", "loop_d"]), min_size=2, max_size=3,
                 unique=True)  # fmt: skip


def _revisits(facts: RunFacts) -> bool:
    names = [name for name, _ in activation_sequence(facts)]
    return len(names) != len(set(names))


def _splice(base: RunFacts, ring: list[str], rounds: int) -> tuple[RunFacts, list[Call]]:
    """``base`` with the ring gone round ``rounds`` times, handed on from its last activation."""
    parent = activation_sequence(base)[-1][1]
    start = max([c.start_ms or 0.0 for c in base.sequence], default=0.0)
    names = [*ring * rounds, ring[0]]
    added: list[Call] = []
    for n, agent in enumerate(names, start=1):
        call = Call(f"loop{n}", parent, agent, "ok", None, start + 2 * n + 1, start + n, "handoff")
        added.append(call)
        parent = call.invocation_id
    sequence = (*base.sequence, *added)
    return replace(base, calls=sequence, sequence=sequence), added


def _fail_last(run: RunFacts, added: list[Call], error: ErrorInfo, where: str) -> RunFacts:
    """The run ended by ``error``: raised by the root, the last activation, or a step of it."""
    last = added[-1]
    steps = run.failed_steps
    calls = list(run.sequence)
    if where == "agent":
        calls[-1] = replace(last, status="error", error=error)
    elif where == "step":
        steps = (*steps, FailedStep("chat", last.invocation_id, last.agent, error, last.start_ms))
    return replace(run, ok=False, error=error, calls=tuple(calls), sequence=tuple(calls),
                   failed_steps=steps)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_RECORDED), _RING, st.integers(1, 4), st.sampled_from(_LIMITS),
       st.sampled_from(["root", "agent", "step"]))  # fmt: skip
def test_a_spliced_cycle_stopped_by_a_limit_is_recursion_with_that_circle(
    base: RunFacts, ring: list[str], rounds: int, limit: ErrorInfo, where: str
) -> None:
    run, added = _splice(base, ring, rounds)
    found = classify_run(_fail_last(run, added, limit, where))
    assert (found.outcome, found.circle) == ("failed:recursion", canonical_circle([*ring, ring[0]]))
    assert found.loop is not None and found.loop.stopped == "limit"
    assert found.loop.revisits == rounds and found.origin_code == limit.code
    assert found.origin_agent == added[-1].agent  # where the limit struck, or the last activation


_LOOPED = ["turns", "steps", "iterations", "rounds", "handoffs", "hops", "transfers", "delegations"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_RECORDED), _RING, st.integers(1, 4), st.integers(1, 10_000),
       st.sampled_from(_LOOPED), st.sampled_from(["", "agent "]))  # fmt: skip
def test_an_apps_loop_guard_in_its_own_words_is_a_limit_that_stops_the_circle(
    base: RunFacts, ring: list[str], rounds: int, most: int, looped: str, agent: str
) -> None:
    # an app's own guard above the agents, known only by its message (no exception type)
    guard = ErrorInfo(
        code="Error", message=f"{ring[-1]} -> {ring[0]}: more than {most} {agent}{looped}"
    )
    run, added = _splice(base, ring, rounds)
    found = classify_run(_fail_last(run, added, guard, "root"))
    assert (found.outcome, found.circle) == ("failed:recursion", canonical_circle([*ring, ring[0]]))
    assert found.loop is not None and found.loop.stopped == "limit"
    # the same count of what no loop counts, or at a rate, is no limit: an ordinary failure
    for said in (f"more than {most} arguments", f"more than {most} {looped} per minute",
                 f"more than {most} requests"):  # fmt: skip
        other = classify_run(_fail_last(run, added, ErrorInfo(code="Error", message=said), "root"))
        assert other.outcome == "failed:child" and other.loop is None


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([f for f in _RECORDED if f.ok]), _RING, st.integers(3, 5))
def test_the_same_cycle_without_a_limit_is_a_loop_finding_not_a_failure(
    base: RunFacts, ring: list[str], rounds: int
) -> None:
    run, _ = _splice(base, ring, rounds)
    found = classify_run(run)
    assert found.outcome == classify_run(base).outcome and not found.outcome.startswith("failed")
    assert found.loop is not None
    assert (found.loop.circle, found.loop.stopped, found.loop.revisits) == (
        canonical_circle([*ring, ring[0]]), "finished", rounds,
    )  # fmt: skip
    assert classify_run(run, loop_min=rounds + 1).loop is None  # below the threshold: no finding


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([f for f in _RECORDED if not _revisits(f)]),
       st.sampled_from(_LIMITS), st.sampled_from(["root", "agent", "step"]))  # fmt: skip
def test_a_limit_without_any_revisit_is_not_recursion(
    base: RunFacts, limit: ErrorInfo, where: str
) -> None:
    run, added = _splice(base, ["loop_a"], 0)  # one more activation, no revisit
    found = classify_run(_fail_last(run, added, limit, where))
    assert found.outcome == "failed:child" and found.circle is None and found.loop is None


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_RECORDED), _RING, st.integers(1, 4), st.sampled_from(["agent", "step"]))
def test_agents_that_revisit_then_fail_with_an_ordinary_error_are_a_child_failure(
    base: RunFacts, ring: list[str], rounds: int, where: str
) -> None:
    run, added = _splice(base, ring, rounds)
    error = ErrorInfo(code="ValueError", message="invoice id is not a number")
    found = classify_run(_fail_last(run, added, error, where))
    assert found.outcome == "failed:child" and found.circle is None and found.loop is None
    if not any(c.failed for c in base.calls):  # else the recorded failure may be the origin
        assert found.origin_code == "ValueError"


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_RECORDED), _RING, st.integers(1, 4), st.sampled_from(_LIMITS),
       st.permutations(["n1", "n2", "n3", "n4"]))  # fmt: skip
def test_renaming_agents_renames_the_circle(
    base: RunFacts, ring: list[str], rounds: int, limit: ErrorInfo, names: list[str]
) -> None:
    run = _fail_last(*_splice(base, ring, rounds), limit, "root")
    rename = dict(zip(["loop_a", "loop_b", "loop_c", "loop_d"], names, strict=True))
    renamed = [replace(c, agent=rename.get(c.agent, c.agent)) for c in run.sequence]
    again = replace(run, calls=tuple(renamed), sequence=tuple(renamed))
    assert classify_run(again).circle == canonical_circle([rename[a] for a in [*ring, ring[0]]])


def test_a_limit_the_app_handled_after_a_cycle_is_degraded_with_its_circle() -> None:
    base = RunFacts("r", "triage", True, True)
    run, added = _splice(base, ["billing", "triage"], 2)
    last = replace(added[-1], status="error", error=_LIMITS[1])
    calls = (*run.sequence[:-1], last)
    found = classify_run(replace(run, calls=calls, sequence=calls))
    assert (found.outcome, found.circle, found.origin_agent, found.origin_code) == (
        "degraded", "billing -> triage -> billing", "billing", "MaxTurnsExceeded",
    )  # fmt: skip
    assert found.loop is not None and found.loop.stopped == "silent"


def test_a_silent_stop_recorded_on_the_run_end_is_degraded_not_ok() -> None:
    stop = ErrorInfo(code="MaxMessageTermination", message="Maximum number of messages 6 reached")
    run, _ = _splice(RunFacts("r", "planner", True, True, stop), ["billing", "planner"], 2)
    found = classify_run(run)
    assert (found.outcome, found.circle, found.origin_code) == (
        "degraded", "billing -> planner -> billing", "MaxMessageTermination",
    )  # fmt: skip


def test_call_path_refusals_keep_their_meaning_and_carry_a_refused_loop() -> None:
    refused = Call("i2", "i1", "orders", "refused",
                   ErrorInfo(code="AGENT_RECURSION", chain=["orders", "billing", "orders"]))  # fmt: skip
    billing = Call("i1", None, "billing", "error", refused.error)
    found = classify_run(RunFacts("r", "orders", True, False, refused.error, (billing, refused)))
    assert (found.outcome, found.circle, found.origin.invocation_id) == (
        "failed:recursion", "billing -> orders -> billing", "i2",
    )  # fmt: skip
    assert found.loop is not None
    assert (found.loop.stopped, found.loop.revisits, found.loop.members) == (
        "refused", 1, (None, "i1", "i2"),
    )  # fmt: skip
