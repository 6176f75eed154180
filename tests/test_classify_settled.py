"""Runs that activate an agent twice, settled without the rules only when they cannot loop.

The set-based pass counts each agent's activations and how often it shows in the
run's sequence (:func:`tracekit.store.hard.may_go_round`); a run it settles must
get exactly what the pure rules give on its full facts: the outcome, and no loop.
Random delegation trees (delegates and handoffs, calls still running, runs with
no end or no root agent) with every ``loop_min`` are checked against
:func:`~tracekit.failures.rules.classify_run`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit import Store
from tracekit.failures import classify_run, run_facts
from tracekit.intake import read_trace
from tracekit.store.classify import classify_store
from tracekit.store.ingest import ingest_paths

_AGENTS = ("desk", "a", "b", "c")


@st.composite
def _run(draw: st.DrawFn, run: str) -> list[dict[str, Any]]:
    """One root run: a tree of up to 12 invocations of four agents, started in any order."""
    count = draw(st.integers(0, 12))
    starts = draw(st.permutations(range(count)))
    records: list[dict[str, Any]] = []
    if draw(st.booleans()) or not count:
        records.append({"type": "run.start", "ts": 0, "runId": run, "agent": "desk"})
    for i in range(count):
        parent = draw(st.integers(-1, i - 1))
        at = 1 + starts[i]
        enter = {
            "type": "enter",
            "ts": at,
            "invocationId": f"{run}-i{i}",
            "runId": f"{run}/{i}",
            "parentRunId": run if parent < 0 else f"{run}/{parent}",
            "agent": draw(st.sampled_from(_AGENTS)),
            "node": "n",
            "kind": draw(st.sampled_from(("delegate", "delegate", "handoff"))),
        }
        records.append(enter)
        if draw(st.integers(0, 9)):  # else still running: no exit
            keep = ("invocationId", "runId", "parentRunId", "agent", "node")
            records.append(
                {"type": "exit", "ts": at + 0.5, "ok": True} | {k: enter[k] for k in keep}
            )
    if draw(st.integers(0, 9)):  # else incomplete
        records.append({"type": "run.end", "ts": 100, "runId": run, "ok": True})
    return records


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loop_min=st.integers(1, 4))
def test_a_run_settled_without_the_rules_gets_what_the_rules_give(
    data: st.DataObject, loop_min: int, tmp_path_factory: Any
) -> None:
    folder: Path = tmp_path_factory.mktemp("settled")
    records = [r for n in range(20) for r in data.draw(_run(f"r{n}"))]
    trace = folder / "runs.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    with Store(folder / "s.duckdb") as store:
        ingest_paths(store.con, [trace], classify=False)
        classify_store(store, loop_min=loop_min)
        rows = {
            r[0]: r[1:]
            for r in store.con.execute("SELECT run_id, outcome, circle FROM runs").fetchall()
        }
        loops = {
            r[0]: r[1:]
            for r in store.con.execute(
                "SELECT run_id, circle, revisits, stopped FROM loops"
            ).fetchall()
        }
    expected_loops = {}
    for facts in run_facts(read_trace(trace).events):
        finding = classify_run(facts, loop_min=loop_min)
        assert rows[facts.run_id] == (finding.outcome, finding.circle), facts.run_id
        if finding.loop is not None:
            loop = finding.loop
            expected_loops[facts.run_id] = (loop.circle, loop.revisits, loop.stopped)
    assert loops == expected_loops
