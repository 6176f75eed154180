"""``Store.find`` against the simulator's ground truth, every operator, and hostile names."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._find_oracle import (
    HOSTILE,
    Run,
    expected,
    hostile_trace,
    recursion_refusals,
    simulated_fleet,
    step,
)
from tracekit import FindResult, Store

RUNS = 400
SEED = 5


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, list[Run]]]:
    base = tmp_path_factory.mktemp("find")
    runs = simulated_fleet(base / "fleet.jsonl", RUNS, SEED)
    store = Store(base / "fleet.duckdb")
    store.ingest(base / "fleet.jsonl")
    yield store, runs
    store.close()


def found(result: FindResult) -> set[tuple[str, tuple[str, ...]]]:
    return {
        (r, tuple(ids))
        for r, ids in zip(result.paths.run_id, result.paths.invocation_ids, strict=True)
    }


# query -> (steps, edges) for the oracle; each must match something in the fleet
GOLDEN = {
    "billing > refunds": ([step("billing"), step("refunds")], [">"]),
    "billing >> refunds": ([step("billing"), step("refunds")], [">>"]),
    "triage > billing > refunds": ([step("triage"), step("billing"), step("refunds")], [">", ">"]),
    "triage >> knowledge-base": ([step("triage"), step("knowledge-base")], [">>"]),
    "* ~> billing": ([step(), step("billing")], ["~>"]),
    "triage ~>> *": ([step("triage"), step()], ["~>>"]),
    "*[kind=handoff] ~>> *": ([step(kind="handoff"), step()], ["~>>"]),
    "planner >> critic[status=error]": ([step("planner"), step("critic", status="error")], [">>"]),
    "*[status=refused]": ([step(status="refused")], []),
    "*[code=AGENT_FAILED] > *[code!=AGENT_FAILED]": (
        [step(code="AGENT_FAILED"), step(code=lambda c: c != "AGENT_FAILED")],
        [">"],
    ),
    "*[duration>2s]": ([step(duration=lambda d: d is not None and d > 2000)], []),
    "researcher[duration<=1.5s]": (
        [step("researcher", duration=lambda d: d is not None and d <= 1500)],
        [],
    ),
    "*[duration>=0.1m]": ([step(duration=lambda d: d is not None and d >= 6000)], []),
    "orchestrator > *[kind=subagent]": ([step("orchestrator"), step(kind="subagent")], [">"]),
    "sql >> *[kind=delegate, status=error]": (
        [step("sql"), step(kind="delegate", status="error")],
        [">>"],
    ),
    "*[service=data-desk, depth=3]": ([step(service="data-desk", depth=3)], []),
    "*[depth>0, status!=ok] >> *[status=cancelled]": (
        [step(depth=lambda d: d > 0, status=lambda s: s != "ok"), step(status="cancelled")],
        [">>"],
    ),
    "*[status=running] > *": ([step(status="running"), step()], [">"]),
    "triage[status=error] > billing": ([step("triage", status="error"), step("billing")], [">"]),
}


@pytest.mark.parametrize("query", list(GOLDEN))
def test_golden_queries_match_the_ground_truth(fleet: tuple[Store, list[Run]], query: str) -> None:
    store, runs = fleet
    steps, edges = GOLDEN[query]
    want = expected(runs, steps, edges)
    assert want, f"{query}: the fleet should hold a match (pick another seed)"
    result = store.find(query)
    assert found(result) == want
    assert result.total_paths == len(want)
    assert set(result.runs.run_id) == {r for r, _ in want}
    assert result.runs.paths.sum() == len(want)


AGENTS = ["triage", "billing", "refunds", "invoices", "planner", "writer", "critic", "sql", "*"]
STATUSES = [None, "ok", "error", "refused", "cancelled", "running"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.sampled_from(AGENTS), st.sampled_from(STATUSES)), min_size=1, max_size=3),
    st.data(),
)
def test_any_chain_matches_the_ground_truth(
    fleet: tuple[Store, list[Run]], chain: list[tuple[str, str | None]], data: st.DataObject
) -> None:
    store, runs = fleet
    edges = [data.draw(st.sampled_from([">", ">>", "~>", "~>>"])) for _ in chain[1:]]
    text, steps = "", []
    for n, (agent, status) in enumerate(chain):
        text += (
            (f" {edges[n - 1]} " if n else "") + agent + (f"[status={status}]" if status else "")
        )
        want = {"status": status} if status else {}
        steps.append(step(None if agent == "*" else agent, **want))
    assert found(store.find(text)) == expected(runs, steps, edges), text


def test_a_root_agent_matches_as_the_first_step(fleet: tuple[Store, list[Run]]) -> None:
    store, runs = fleet
    result = store.find("triage")
    assert set(result.paths.run_id) == {r.root.id for r in runs if r.root.agent == "triage"}
    # the root's step shows its run id, and a root has no kind
    assert all(ids[0] == run for run, ids in found(result))
    assert store.find("triage[kind=delegate]").total_paths == 0


@pytest.mark.parametrize("through", [None, "billing", "writer", "sql"])
def test_circle_matches_the_invocation_refused_for_recursion(
    fleet: tuple[Store, list[Run]], through: str | None
) -> None:
    store, runs = fleet
    want = recursion_refusals(runs, through)
    assert want
    query = "circle" if through is None else f"circle({through})"
    assert found(store.find(query)) == want
    truth_circles = {r.root.id for r in runs if any(n.status == "refused" for n in r.root.walk())}
    assert {run for run, _ in want} <= truth_circles


def test_circle_in_a_chain(fleet: tuple[Store, list[Run]]) -> None:
    store, runs = fleet
    refused = recursion_refusals(runs, "billing")
    want = {(run, (run, *ids)) for run, ids in refused}
    assert found(store.find("triage >> circle(billing)")) == {
        p for p in want if any(r.root.id == p[0] and r.root.agent == "triage" for r in runs)
    }


def test_result_frames(fleet: tuple[Store, list[Run]]) -> None:
    store, _ = fleet
    result = store.find("billing > refunds", limit=3)
    assert len(result.paths) == 3 and len(result.runs) == 3
    assert result.total_paths > 3
    assert list(result.paths.columns) == ["run_id", "path", "invocation_ids", "agents", "statuses"]
    assert set(result.paths.path) == {"billing > refunds"}
    assert list(result.paths.agents.iloc[0]) == ["billing", "refunds"]
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert {"service", "outcome", "root_agent", "start_at"} <= set(frame.columns)
    assert (frame.service == "support-desk").all()
    assert repr(result).startswith("FindResult('billing > refunds': ")
    starts = store.find("billing > refunds").runs.start_at.tolist()
    assert starts == sorted(starts)  # oldest first


def test_nothing_found_is_an_empty_result(fleet: tuple[Store, list[Run]]) -> None:
    store, _ = fleet
    result = store.find("refunds > triage")
    assert (result.total_paths, result.total_runs, len(result.paths), len(result.runs)) == (
        0,
        0,
        0,
        0,
    )


# --- hostile names ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    base = tmp_path_factory.mktemp("hostile")
    store = Store(base / "h.duckdb")
    store.ingest(hostile_trace(base / "h.jsonl"))
    yield store
    store.close()


@pytest.mark.parametrize(
    ("query", "ids"),
    [
        ('"a > b"', ["i0"]),
        ("'a > b' ~> 'say \"hi\"'", ["i0", "i1"]),
        ('"say \\"hi\\""', ["i1"]),
        ('"[x]"[kind=handoff]', ["i2"]),
        ("ünïcødé", ["i3"]),
        ('"red\x1b[31m"', ["i4"]),
        ('"circle" ~> "*"', ["i5", "i6"]),
        ('"it\'s" > 日本', ["i7", "i8"]),
        ("front > * ~>> 日本", ["r", "i0", "i8"]),
    ],
)
def test_hostile_names_are_matched_when_quoted(hostile: Store, query: str, ids: list[str]) -> None:
    result = hostile.find(query)
    assert [list(v) for v in result.paths.invocation_ids] == [ids]


def test_hostile_names_are_quoted_in_the_path(hostile: Store) -> None:
    path = hostile.find("front >> *").paths.path.tolist()
    assert path == [
        'front >> "a > b"',
        'front >> "say \\"hi\\""',
        'front >> "[x]"',
        "front >> ünïcødé",
        'front >> "red\x1b[31m"',
        'front >> "circle"',
        'front >> "*"',
        'front >> "it\'s"',
        "front >> 日本",
        "front >> \"=cmd|' /C calc'!A0\"",
    ]


def test_star_is_any_agent_and_quoted_star_is_the_name(hostile: Store) -> None:
    assert hostile.find("*").total_paths == len(HOSTILE) + 1
    assert hostile.find('"*"').total_paths == 1
