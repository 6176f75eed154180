"""The store's numbers for /metrics: runs, circles and loop costs, bounded, against hand sums."""

from __future__ import annotations

from pathlib import Path

import pytest
from _loops_helpers import HOSTILE_CIRCLE, HOSTILE_SERVICE, LOOPS, T0, hand_sum, loop_store

from tracekit.store import Store
from tracekit.store.gauges import OTHER, store_gauges


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return loop_store(tmp_path_factory.mktemp("gauges"))


def test_runs_by_service_and_outcome(db: Path) -> None:
    with Store(db, read_only=True) as store:
        gauges = store_gauges(store.con, now_ms=T0 + 100 * 3_600_000)
    assert sorted(gauges.runs) == sorted(
        [
            ("desk-svc", "ok", 3),
            ("desk-svc", "degraded", 1),
            ("desk-svc", "incomplete", 1),
            (HOSTILE_SERVICE, "failed:recursion", 1),
        ]
    )
    assert gauges.incomplete == {"crashed": 1, "running": 0}


def test_an_incomplete_run_that_moved_lately_is_running(db: Path) -> None:
    with Store(db, read_only=True) as store:
        gauges = store_gauges(store.con, now_ms=T0 + 5 * 3_600_000 + 60_000)
    assert gauges.incomplete == {"crashed": 0, "running": 1}


def test_loop_costs_are_the_hand_sums(db: Path) -> None:
    with Store(db, read_only=True) as store:
        gauges = store_gauges(store.con)
    assert {(c.circle, c.stopped) for c in gauges.loops} == {(r[1], r[3]) for r in LOOPS}
    for cost in gauges.loops:
        expected = hand_sum(cost.circle, cost.stopped)
        assert cost.runs == expected["runs"]
        assert cost.revisits == expected["revisits"]
        assert cost.invocations == expected["invocations"]
        assert cost.model_calls == (expected["model_calls"] or 0)
        assert cost.input_tokens == (expected["input_tokens"] or 0)
        assert cost.output_tokens == (expected["output_tokens"] or 0)
        assert cost.duration_ms == pytest.approx(expected["duration_ms"] or 0.0)


def test_past_top_names_the_rest_are_summed_as_other(db: Path) -> None:
    """top=1: the costliest circle keeps its name, the others add up under 'other'."""
    with Store(db, read_only=True) as store:
        gauges = store_gauges(store.con, top=1)
    names = {c.circle for c in gauges.loops}
    assert names == {"billing -> refunds -> billing", OTHER}
    other = [c for c in gauges.loops if c.circle == OTHER]
    rest = [r for r in LOOPS if r[1] != "billing -> refunds -> billing"]
    assert sum(c.input_tokens for c in other) == sum(r[8] for r in rest)
    assert {c.stopped for c in other} == {r[3] for r in rest}
    # services: the one with most runs keeps its name; runs are conserved
    assert {s for s, _, _ in gauges.runs} == {"desk-svc", OTHER}
    assert sum(n for _, _, n in gauges.runs) == 6
    assert gauges.circles == [(HOSTILE_CIRCLE, "failed:recursion", 1)]


def test_top_zero_names_nothing(db: Path) -> None:
    with Store(db, read_only=True) as store:
        gauges = store_gauges(store.con, top=0)
    assert {c.circle for c in gauges.loops} == {OTHER}
    assert sum(c.revisits for c in gauges.loops) == sum(r[2] for r in LOOPS)
