"""Golden tests: every sample trace prints its expected tree, text and JSON."""

from __future__ import annotations

import json

import pytest
from _tree_helpers import SAMPLES, cli_golden, run_cli

from tracekit import agent_tree, build_forest, describe_agent_tree, describe_forest, read_trace

CASES = sorted(p.stem for p in SAMPLES.glob("*.jsonl"))
JSON_CASES = sorted(p.name.removesuffix(".tree.json") for p in SAMPLES.glob("*.tree.json"))


def test_the_seven_scenarios_and_the_odd_trace_are_there() -> None:
    assert CASES == [
        "agent_orchestrator",
        "background_subagents",
        "child_failure",
        "crashed_run",
        "escalation_desk",
        "handoff_chain",
        "odd_trace",
        "recursion_circle",
    ]
    assert set(JSON_CASES) <= set(CASES) and len(JSON_CASES) >= 4


@pytest.mark.parametrize("case", CASES)
def test_library_prints_the_expected_tree(case: str) -> None:
    expected = (SAMPLES / f"{case}.tree.txt").read_text()
    events = read_trace(SAMPLES / f"{case}.jsonl").events
    assert describe_forest(build_forest(events)) + "\n" == expected
    if not expected.startswith("run "):  # a single root run: agent_tree is all of it
        assert describe_agent_tree(agent_tree(events)) + "\n" == expected


@pytest.mark.parametrize("case", CASES)
def test_command_prints_the_expected_tree(case: str) -> None:
    result = run_cli("tree", str(SAMPLES / f"{case}.jsonl"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == cli_golden(SAMPLES / f"{case}.tree.txt")


@pytest.mark.parametrize("case", JSON_CASES)
def test_command_json_matches_the_expected_json(case: str) -> None:
    result = run_cli("tree", str(SAMPLES / f"{case}.jsonl"), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((SAMPLES / f"{case}.tree.json").read_text())


def test_the_seed_lines_print_exactly() -> None:
    text = "".join((SAMPLES / f"{case}.tree.txt").read_text() for case in CASES)
    rows = {row.strip() for row in text.splitlines()}
    for line in (
        "delegate -> sql (ok, 11ms)",
        "escalate -> refunds (error AGENT_FAILED, 5ms)",
        "delegate -> orders (refused AGENT_RECURSION: orders -> billing -> orders)",
        "transfer -> billing (handoff, ok, 30ms)",
        "delegate -> sql (running)",
    ):
        assert line in rows, line
