"""The simulated fleet: reproducible bytes, one fleet in both formats, a truth that holds."""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.errors import TracekitError
from tracekit.events import ErrorInfo
from tracekit.failures import canonical_circle
from tracekit.intake import read_trace
from tracekit.intake.otlp.convert import REFUSALS
from tracekit.simulation.simulator import (
    SimulationRates,
    parse_duration_ms,
    simulate,
)
from tracekit.tree import AgentStep, RunTree, agents_in, build_forest

# Boosted rates so that a few hundred runs hold every class several times.
RATES = SimulationRates(
    failure=0.15, recursion=0.1, refusal=0.1, handled=0.15, cancel=0.07, crash=0.07
)
CLASSES = {
    "ok",
    "degraded",
    "failed:recursion",
    "failed:child",
    "failed:refused",
    "cancelled",
    "incomplete",
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One fleet of 400 runs written both ways, with its truth."""
    base = tmp_path_factory.mktemp("fleet")
    v1, otlp, truth = base / "fleet.jsonl", base / "fleet.otlp.jsonl", base / "truth.jsonl"
    report = simulate(v1, runs=400, seed=11, rates=RATES, truth=truth)
    otlp_report = simulate(otlp, runs=400, seed=11, rates=RATES, format="otlp")
    rows = [json.loads(line) for line in truth.read_text().splitlines()]
    return {"v1": v1, "otlp": otlp, "truth": rows, "report": report, "otlp_report": otlp_report}


def test_same_arguments_same_bytes(tmp_path: Path) -> None:
    for fmt in ("tracekit", "otlp"):
        a, b = tmp_path / f"a.{fmt}.jsonl.gz", tmp_path / f"b.{fmt}.jsonl.gz"
        ta, tb = tmp_path / f"ta.{fmt}", tmp_path / f"tb.{fmt}"
        simulate(a, runs=150, seed=3, format=fmt, truth=ta)  # type: ignore[arg-type]
        simulate(b, runs=150, seed=3, format=fmt, truth=tb)  # type: ignore[arg-type]
        assert _digest(a) == _digest(b)
        assert _digest(ta) == _digest(tb)
        assert read_trace(a).bad_lines == []
        assert (
            len({e.runId for e in read_trace(a).events if e.__class__.__name__ == "RunStart"})
            == 150
        )
        assert gzip.decompress(a.read_bytes()).endswith(b"\n")


def test_another_seed_other_bytes(tmp_path: Path) -> None:
    simulate(tmp_path / "a.jsonl", runs=50, seed=1)
    simulate(tmp_path / "b.jsonl", runs=50, seed=2)
    assert _digest(tmp_path / "a.jsonl") != _digest(tmp_path / "b.jsonl")


def test_both_formats_are_one_fleet(fleet: dict[str, Any]) -> None:
    v1 = read_trace(fleet["v1"])
    otlp = read_trace(fleet["otlp"])
    assert v1.bad_lines == [] and otlp.bad_lines == []
    assert otlp.format == "otlp"
    assert len(v1.events) == fleet["report"].events == len(otlp.events)
    mine, theirs = _as_read(v1.events, otlp.events), otlp.events
    assert sorted(map(repr, mine)) == sorted(map(repr, theirs))
    assert build_forest(mine).runs == build_forest(theirs).runs
    # OTLP runs really do straddle lines: more lines than a run per line would need.
    assert fleet["otlp_report"].spans > 512 * 3
    assert fleet["otlp"].read_bytes().count(b"\n") >= fleet["otlp_report"].spans // 512


def _as_read(v1: list[Any], otlp: list[Any]) -> list[Any]:
    """The v1 records as an OTLP reader that reads no usage or session gives them.

    The simulator writes both (GenAI attributes in OTLP); while the OTLP reader
    does not read them, only what it reads is compared.
    """
    import msgspec

    reads_usage = any(getattr(e, "usage", None) for e in otlp)
    reads_session = any(getattr(e, "session", None) for e in otlp)
    out = []
    for event in v1:
        if not reads_usage and getattr(event, "usage", None) is not None:
            event = msgspec.structs.replace(event, usage=None)
        if not reads_session and getattr(event, "session", None) is not None:
            event = msgspec.structs.replace(event, session=None)
        out.append(event)
    return out


def test_simulated_runs_have_usage_and_sessions(fleet: dict[str, Any]) -> None:
    exits = [e for e in read_trace(fleet["v1"]).events if type(e).__name__ == "Exit"]
    assert exits and all(e.usage is not None for e in exits if e.status != "refused")
    assert all(e.usage is None for e in exits if e.status == "refused")
    sessions = Counter(row["session_id"] for row in fleet["truth"])
    assert 1 < len(sessions) < len(fleet["truth"])  # several runs to a session, several sessions
    assert all(n >= 1 for n in sessions.values())
    tokens = [row["input_tokens"] for row in fleet["truth"] if row["invocations"]]
    assert tokens and all(t is None or t > 0 for t in tokens)


def test_every_class_is_present(fleet: dict[str, Any]) -> None:
    counts = Counter(row["outcome"] for row in fleet["truth"])
    assert set(counts) == CLASSES
    assert min(counts.values()) >= 10
    assert counts == fleet["report"].outcomes
    assert len(fleet["truth"]) == 400


def _failed(step: AgentStep) -> bool:
    return step.status in ("error", "refused")


def _depth_of(tree: RunTree, invocation_id: str) -> int | None:
    stack: list[tuple[list[Any], int]] = [(list(tree.steps), 1)]
    while stack:
        steps, depth = stack.pop()
        for step in steps:
            if isinstance(step, AgentStep):
                if step.invocationId == invocation_id:
                    return depth
                stack.append((step.steps, depth + 1))
    return None


def _root_cause(error: ErrorInfo) -> tuple[ErrorInfo, int]:
    wrappers = 0
    while error.cause is not None:
        error, wrappers = error.cause, wrappers + 1
    return error, wrappers


def _check(row: dict[str, Any], tree: RunTree) -> None:
    outcome = row["outcome"]
    agents = agents_in(tree.steps)
    assert tree.agent == row["agent"] and tree.service == row["service"]
    assert len(agents) == row["invocations"]
    assert sum(map(_failed, agents)) == row["failed_invocations"]
    if outcome == "incomplete":
        assert tree.ok is None
        return
    if outcome in ("ok", "degraded"):
        assert tree.ok is True and tree.error is None
        assert any(map(_failed, agents)) == (outcome == "degraded")
        return
    assert tree.ok is False and tree.error is not None
    if outcome == "cancelled":
        assert tree.error.code == "CANCELLED" and tree.failure is None
    elif outcome == "failed:recursion":
        assert tree.failure == "delegation" and tree.error.code == "AGENT_RECURSION"
        assert tree.error.chain == row["chain"]
        assert canonical_circle(tree.error.chain) == row["circle"]
        refused = [a for a in agents if a.status == "refused"]
        assert [a.error.chain for a in refused if a.error] == [row["chain"]]
    else:
        assert tree.failure == "agent" and tree.error.code == "AGENT_FAILED"
        cause, wrappers = _root_cause(tree.error)
        assert cause.code == row["origin_code"]
        assert wrappers == row["origin_depth"]
        assert (cause.code in REFUSALS) == (outcome == "failed:refused")
        origin = next(a for a in agents if a.invocationId == row["origin_invocation_id"])
        assert origin.agent == row["origin_agent"] and origin.error is not None
        assert origin.error.code == row["origin_code"]
        assert _depth_of(tree, origin.invocationId) == row["origin_depth"]


def test_truth_agrees_with_the_trees(fleet: dict[str, Any]) -> None:
    forest = build_forest(read_trace(fleet["v1"]).events)
    assert forest.integrity.orphanRuns == [] and forest.integrity.cycles == []
    roots = {run.runId: run for run in forest.runs if run.kind == "root"}
    assert len(roots) == 400
    for row in fleet["truth"]:
        _check(row, roots[row["run_id"]])


def test_origins_and_circles_vary(fleet: dict[str, Any]) -> None:
    rows = fleet["truth"]
    depths = {r["origin_depth"] for r in rows if r["outcome"] == "failed:child"}
    circles = {r["circle"] for r in rows if r["outcome"] == "failed:recursion"}
    sizes = {len(r["chain"]) - 1 for r in rows if r["outcome"] == "failed:recursion"}
    codes = {r["origin_code"] for r in rows if r["outcome"] == "failed:refused"}
    assert len(depths) >= 3 and sizes == {2, 3} and len(circles) >= 4
    assert len(codes) >= 4
    assert len({r["service"] for r in rows}) == 3
    assert len({r["agent"] for r in rows}) == 3
    assert max(r["max_depth"] for r in rows) >= 4


def test_runs_overlap_and_fill_the_window(tmp_path: Path) -> None:
    truth = tmp_path / "t.jsonl"
    simulate(tmp_path / "f.jsonl", runs=200, seed=5, start=0, window_ms=3_600_000, truth=truth)
    starts = [json.loads(line)["start_ms"] for line in truth.read_text().splitlines()]
    assert starts == sorted(starts)
    assert 0 <= starts[0] < 60_000 and 3_500_000 < starts[-1] < 3_600_000
    events = read_trace(tmp_path / "f.jsonl").events
    kinds = Counter(getattr(e, "kind", None) for e in events)
    assert kinds["handoff"] > 0 and kinds["subagent"] > 0 and kinds["delegate"] > 0


def test_events_option_stops_once_reached(tmp_path: Path) -> None:
    report = simulate(tmp_path / "f.jsonl", events=3000, seed=1)
    lines = (tmp_path / "f.jsonl").read_bytes().count(b"\n")
    assert lines == report.events and 3000 <= report.events < 3000 + 200


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TracekitError, match="add up to at most 1"):
        SimulationRates(failure=0.7, recursion=0.5)
    with pytest.raises(TracekitError, match="unknown format"):
        simulate(tmp_path / "x", runs=1, format="csv")  # type: ignore[arg-type]
    with pytest.raises(TracekitError, match="cannot write"):
        simulate(tmp_path / "missing" / "x.jsonl", runs=1)
    with pytest.raises(TracekitError, match="not a duration"):
        parse_duration_ms("soon")
    assert parse_duration_ms("90s") == 90_000 and parse_duration_ms("7d") == 7 * 86_400_000


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**63))
def test_any_seed_gives_one_fleet_in_both_formats_and_a_true_truth(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        truth = base / "truth.jsonl"
        simulate(base / "f.jsonl", runs=60, seed=seed, rates=RATES, truth=truth)
        simulate(base / "f.otlp.jsonl", runs=60, seed=seed, rates=RATES, format="otlp")
        v1 = read_trace(base / "f.jsonl").events
        otlp = read_trace(base / "f.otlp.jsonl").events
        assert sorted(map(repr, _as_read(v1, otlp))) == sorted(map(repr, otlp))
        roots = {run.runId: run for run in build_forest(v1).runs if run.kind == "root"}
        for line in truth.read_text().splitlines():
            row = json.loads(line)
            _check(row, roots[row["run_id"]])
