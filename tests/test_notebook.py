"""The notebook helpers: open_run, invocations frames, root causes, rich views."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pandas as pd
import plotly.graph_objects as go
import pytest

from tracekit.errors import RunNotFoundError, TracekitError
from tracekit.events import Enter, ErrorInfo, Event, Exit, RunEnd, RunStart, encode_event
from tracekit.intake import read_trace
from tracekit.notebook import (
    INVOCATION_COLUMNS,
    invocations_frame,
    open_run,
    read_invocations,
)
from tracekit.tree import agent_tree, agents_in, build_forest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


def test_frame_has_the_documented_columns_and_one_row_per_invocation() -> None:
    for path in sorted(SAMPLES.glob("*.jsonl")):
        events = read_trace(str(path)).events
        frame = invocations_frame(events)
        assert tuple(frame.columns) == INVOCATION_COLUMNS, path.name
        assert sorted(frame["invocation_id"]) == sorted(
            step.invocationId for run in build_forest(events).runs for step in agents_in(run.steps)
        )
        assert frame["invocation_id"].is_unique


def test_frame_rows_carry_times_depth_parent_and_error() -> None:
    frame = read_invocations(SAMPLES / "child_failure.jsonl").set_index("invocation_id")
    refunds = frame.loc["inv-r"]
    assert refunds["agent"] == "refunds" and refunds["depth"] == 2
    assert refunds["parent_invocation_id"] == "inv-b"
    assert refunds["root_run_id"] == "run-fail"
    assert refunds["status"] == "error" and refunds["error_code"] == "AGENT_FAILED"
    assert refunds["end_ms"] - refunds["start_ms"] == refunds["duration_ms"] == 5
    assert refunds["service"] == "front-desk"
    assert refunds["start_at"] == pd.Timestamp(refunds["start_ms"], unit="ms")
    assert '"REFUND_API_TIMEOUT"' in refunds["error"]


def test_frame_keeps_running_invocations() -> None:
    frame = read_invocations(SAMPLES / "crashed_run.jsonl")
    assert list(frame["status"]) == ["running"]
    assert frame["end_ms"].isna().all() and frame["ok"].isna().all()


def test_root_cause_of_a_wrapped_failure_is_the_deepest_origin() -> None:
    run = open_run(SAMPLES / "child_failure.jsonl")
    assert run.outcome == "failed:child"
    cause = run.root_cause()
    assert cause is not None
    assert (cause.agent, cause.code, cause.reported) == (
        "refunds",
        "REFUND_API_TIMEOUT",
        "AGENT_FAILED",
    )
    assert cause.path == ["billing", "refunds"] and cause.wrapped == 1 and cause.depth == 2
    assert not cause.is_recursion


def test_root_cause_of_a_recursion_is_the_refused_call_with_its_circle() -> None:
    run = open_run(SAMPLES / "recursion_circle.jsonl")
    assert run.outcome == "failed:recursion" and run.finding is not None
    assert run.finding.circle == "billing -> orders -> billing"  # canonical, as the fleet counts it
    cause = run.root_cause()
    assert cause is not None and cause.is_recursion and cause.wrapped == 2
    assert cause.invocation_id == "inv-o2" and cause.chain == ["orders", "billing", "orders"]
    assert str(cause) == (
        "orders -> billing -> orders (AGENT_RECURSION: orders -> billing -> orders) at depth 3"
    )


def test_root_cause_is_none_for_a_healthy_run_and_the_handled_refusal_of_a_degraded_one() -> None:
    healthy = open_run(SAMPLES / "agent_orchestrator.jsonl")
    assert healthy.outcome == "ok" and healthy.root_cause() is None
    degraded = open_run(SAMPLES / "escalation_desk.jsonl")
    assert degraded.outcome == "degraded"
    handled = degraded.root_cause()
    assert handled is not None and handled.code == "AGENT_NOT_ALLOWED" and handled.wrapped == 0


def test_root_cause_follows_the_callee_whose_error_the_caller_wrapped(tmp_path: Path) -> None:
    def call(inv: str, run: str, parent: str, agent: str, t0: float, t1: float) -> list[Event]:
        error = ErrorInfo(code=f"{agent.upper()}_DOWN")
        return [
            Enter(ts=t0, invocationId=inv, runId=run, parentRunId=parent, agent=agent),
            Exit(ts=t1, invocationId=inv, runId=run, parentRunId=parent, agent=agent, error=error),
        ]

    wrapped = ErrorInfo(code="AGENT_FAILED", cause=ErrorInfo(code="LEDGER_DOWN"))
    events: list[Event] = [
        RunStart(ts=0, runId="r", agent="desk"),
        Enter(ts=1, invocationId="top", runId="c", parentRunId="r", agent="billing"),
        *call("early", "c/1", "c", "ledger", 2, 3),  # the error billing wrapped
        *call("late", "c/2", "c", "refunds", 4, 9),  # failed later, handled
        Exit(ts=10, invocationId="top", runId="c", parentRunId="r", agent="billing", error=wrapped),
        RunEnd(
            ts=11,
            runId="r",
            ok=False,
            failure="agent",
            error=ErrorInfo(code="AGENT_FAILED", cause=wrapped),
        ),
    ]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(encode_event(e) for e in events) + b"\n")
    cause = open_run(path).root_cause()
    assert cause is not None and (cause.agent, cause.code) == ("ledger", "LEDGER_DOWN")
    assert cause.path == ["billing", "ledger"] and cause.wrapped == 1


def test_open_run_picks_a_run_by_id_and_says_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    path.write_bytes(
        (SAMPLES / "agent_orchestrator.jsonl").read_bytes()
        + (SAMPLES / "child_failure.jsonl").read_bytes()
    )
    first = open_run(path)
    assert first.root_cause() is None  # the first root run: the healthy orchestrator
    second = open_run(str(path), "run-fail")
    assert second.run_id == "run-fail" and second.agent == "front_desk"
    assert set(second.invocations["root_run_id"]) == {"run-fail"}
    assert len(second.invocations) == 2
    with pytest.raises(RunNotFoundError, match="run nope is not in") as info:
        open_run(path, "nope")
    assert first.run_id in info.value.hint and "run-fail" in info.value.hint


def test_run_view_shows_as_html_tree_and_as_text() -> None:
    run = open_run(SAMPLES / "recursion_circle.jsonl")
    html = run._repr_html_()
    assert html.startswith('<div class="tracekit-tree"') and "circle: orders" in html
    assert run.header in html
    expected = (SAMPLES / "recursion_circle.tree.txt").read_text().rstrip("\n")
    assert run.header == "run run-circ · front_desk · failed:recursion, 10ms"
    assert str(run) == f"{run.header}\n{expected}"


def test_agent_tree_has_rich_and_plain_views_in_jupyter() -> None:
    tree = agent_tree(read_trace(str(SAMPLES / "agent_orchestrator.jsonl")).events)
    assert "<details" in tree._repr_html_()

    class Printer:
        def __init__(self) -> None:
            self.out = ""

        def text(self, value: str) -> None:
            self.out += value

    printer = Printer()
    tree._repr_pretty_(printer, False)
    assert (
        printer.out
        == str(tree)
        == (SAMPLES / "agent_orchestrator.tree.txt").read_text().rstrip("\n")
    )


def test_run_view_figures_are_plotly_figures_of_its_invocations() -> None:
    run = open_run(SAMPLES / "background_subagents.jsonl")
    timeline = run.timeline(height=400)
    assert isinstance(timeline, go.Figure) and timeline.layout.height == 400
    assert timeline.layout.title.text == run.header
    assert sum(len(t.x) for t in timeline.data) == len(run.invocations) == 3
    assert run.icicle().data[0].labels[0] == "lead"
    assert len(run.sunburst().data[0].ids) == 4


def test_root_causes_in_a_simulated_fleet_match_its_ground_truth(tmp_path: Path) -> None:
    from tracekit.simulation.simulator import simulate

    fleet, truth = tmp_path / "fleet.jsonl", tmp_path / "truth.jsonl"
    simulate(fleet, runs=120, seed=11, truth=truth)
    expected = [msgspec.json.decode(line) for line in truth.read_bytes().splitlines()]
    failed = [run for run in expected if run["outcome"] in ("failed:child", "failed:refused")]
    assert len(failed) >= 5
    for run in failed[:8]:
        view = open_run(fleet, run["run_id"])
        cause = view.root_cause()
        assert view.outcome == run["outcome"] and cause is not None
        assert cause.invocation_id == run["origin_invocation_id"]
        assert (cause.agent, cause.code) == (run["origin_agent"], run["origin_code"])
        assert cause.depth == run["origin_depth"] == len(cause.path)
        assert cause.wrapped == cause.depth - 1  # every caller above wrapped it


def _comparable(frame: pd.DataFrame) -> list[dict[str, object]]:
    columns = [c for c in INVOCATION_COLUMNS if c not in ("start_at", "end_at")]
    rows = frame[columns].astype(object).where(frame[columns].notna(), None)
    return rows.to_dict("records")


def test_a_run_from_the_store_matches_the_run_from_its_file(tmp_path: Path) -> None:
    from tracekit.store import Store

    with Store(tmp_path / "samples.duckdb") as store:
        store.ingest(SAMPLES)
        for path in sorted(SAMPLES.glob("*.jsonl")):
            from_file = open_run(path)
            from_store = open_run(store, from_file.run_id)
            assert str(from_store) == str(from_file), path.name
            assert _comparable(from_store.invocations) == _comparable(from_file.invocations)
            assert from_store.root_cause() == from_file.root_cause(), path.name
            assert "failure_role" in from_store.invocations.columns  # the store's own extras


def test_open_run_on_a_store_needs_a_run_id_when_there_are_several(tmp_path: Path) -> None:
    from tracekit.store import Store

    with Store(tmp_path / "one.duckdb") as store:
        store.ingest(SAMPLES / "recursion_circle.jsonl")
        assert open_run(store).run_id == "run-circ"  # the only run
        store.ingest(SAMPLES / "child_failure.jsonl")
        with pytest.raises(TracekitError, match="several runs") as info:
            open_run(store)
        assert "store.runs()" in info.value.hint


def test_open_run_takes_a_store_file_path(tmp_path: Path) -> None:
    from tracekit.notebook import open_run
    from tracekit.store import Store

    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.ingest(str(SAMPLES / "child_failure.jsonl"))
        run_id = str(store.runs().run_id.iloc[0])
        from_store = open_run(store, run_id)
    run = open_run(str(path), run_id)  # read as a store, not as a trace file
    assert (run.run_id, run.outcome) == (from_store.run_id, from_store.outcome)
    assert run.invocations.equals(from_store.invocations)
