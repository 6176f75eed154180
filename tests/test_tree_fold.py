"""Folding: golden folded trees, --fold/--no-fold/--expand through the installed command,
hostile names, deep chains and a big fan-out (linear, no recursion)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from _tree_helpers import ROOT, call, cli_golden, enter, exit_, node, run_cli, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit import build_forest, read_trace
from tracekit.errors import TracekitError
from tracekit.tree.fold import (
    FOLD_AT,
    Folder,
    Shapes,
    group_text,
    needs_folding,
    opened_steps,
    status_counts,
)
from tracekit.tree.model import AgentStep, NodeStep, Step, iter_steps
from tracekit.tree.text import describe_agent_tree, describe_forest

GOLDEN = ROOT / "tests" / "golden" / "fold"
CASES = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))


def _tree(path: Path) -> list[Step]:
    return build_forest(read_trace(path).events).runs[0].steps


def _sql(status: str = "ok", steps: list[Step] | None = None, agent: str = "sql") -> AgentStep:
    return AgentStep(
        agent=agent, node="delegate", kind="delegate", runId="c", parentRunId="r",
        invocationId="i", ok=status == "ok", status=status, durationMs=3.0, steps=steps or [],
    )  # fmt: skip


def test_the_golden_cases_are_there() -> None:
    assert CASES == ["fanout", "hostile", "nested"]


@pytest.mark.parametrize("case", CASES)
def test_library_prints_the_golden_folded_tree(case: str) -> None:
    expected = (GOLDEN / f"{case}.tree.txt").read_text()
    forest = build_forest(read_trace(GOLDEN / f"{case}.jsonl").events)
    assert describe_forest(forest) + "\n" == expected


@pytest.mark.parametrize("case", CASES)
def test_command_prints_the_golden_folded_tree(case: str) -> None:
    result = run_cli("tree", str(GOLDEN / f"{case}.jsonl"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == cli_golden(GOLDEN / f"{case}.tree.txt")


def test_fanout_line_counts_and_sums_up_statuses() -> None:
    text = (GOLDEN / "fanout.tree.txt").read_text()
    assert "delegate -> sql (ok) x25, 2 errors, 1 refused" in text.splitlines()
    assert "decide x25" in text.splitlines()


def test_no_fold_prints_every_line_and_fold_folds_short_lists(tmp_path: Path) -> None:
    fanout = str(GOLDEN / "fanout.jsonl")
    plain = run_cli("tree", fanout, "--no-fold")
    assert plain.returncode == 0 and len(plain.stdout.splitlines()) == 51 + 2  # and why: 2 lines
    assert plain.stdout.count("delegate -> sql (error SQL_TIMEOUT, 5ms)") == 2
    short = write_jsonl(
        tmp_path / "short.jsonl",
        [node(0, "r", "go")]
        + [e for i in range(3) for e in call(10 * i + 1, 10 * i + 5, f"i{i}", f"c{i}", "r", "sql")],
    )
    no_end = "outcome incomplete: no end was seen (crashed, or still running)\n"  # no run.end
    assert run_cli("tree", str(short)).stdout == "go\n" + "delegate -> sql (ok, 4ms)\n" * 3 + no_end
    assert run_cli("tree", str(short), "--fold").stdout == "go\ndelegate -> sql (ok) x3\n" + no_end


def test_expand_opens_one_group_through_the_command() -> None:
    nested = str(GOLDEN / "nested.jsonl")
    result = run_cli("tree", nested, "--expand", "batch[9]/sql[0]")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "fan_out -> batch (ok) x20"  # the other 20 of that shape stay folded
    assert "    check -> checker (error LINT, 1ms)" in lines
    every = run_cli("tree", nested, "--expand", "batch").stdout.splitlines()
    assert sum(line.startswith("fan_out -> batch (ok, 60ms)") for line in every) == 22


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("nope", "no step nope under the top level"),
        ("batch[99]", "no step batch[99] under the top level"),
        ("batch/ghost", "no step ghost under batch"),
        ("batch[x]", "[x] is not an index"),
        ("batch//sql", "an empty name"),
    ],
)
def test_a_bad_expand_path_is_an_error_not_a_traceback(path: str, message: str) -> None:
    result = run_cli("tree", str(GOLDEN / "nested.jsonl"), "--expand", path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr and result.stderr.startswith("Error: ")


def test_hostile_names_stay_escaped_when_folded() -> None:
    text = (GOLDEN / "hostile.tree.txt").read_text()
    assert "\x1b" not in text and "\x07" not in text
    assert "ask\\x07 -> \\x1b[31mevil (ok) x21" in text


def test_folded_colour_paints_only_the_status(tmp_path: Path) -> None:
    result = run_cli("tree", str(GOLDEN / "fanout.jsonl"), "--color", "always")
    assert "delegate -> sql (\x1b[32mok\x1b[0m) x25, 2 errors, 1 refused" in result.stdout


def test_shapes_differ_by_subtree_not_by_status() -> None:
    shapes = Shapes()
    ok, failed = _sql("ok", [NodeStep("say")]), _sql("error", [NodeStep("say")])
    other = _sql("ok", [NodeStep("say"), NodeStep("say")])
    assert shapes.of(ok) == shapes.of(failed) != shapes.of(other)
    assert shapes.of(_sql()) != shapes.of(_sql(agent="orders"))
    assert shapes.of(NodeStep("sql")) != shapes.of(_sql())


def test_a_group_under_a_folded_parent_counts_every_member() -> None:
    batches = [_sql("ok", [_sql("error" if i == 0 else "ok") for _ in range(30)], "batch")
               for i in range(25)]  # fmt: skip
    folder = Folder()
    (top,) = folder.top(batches)
    (below,) = folder.children(top)
    assert group_text(top) == "delegate -> batch (ok) x25"
    assert group_text(below) == "delegate -> sql (ok) x30 (750 in all), 30 errors"


def test_threshold_and_needs_folding() -> None:
    assert not needs_folding([NodeStep("a")] * FOLD_AT)
    assert needs_folding([_sql("ok", [NodeStep("a")] * (FOLD_AT + 1))])


def test_opened_steps_names_the_path_and_its_way() -> None:
    inner = _sql("ok", [], "checker")
    outer = [_sql("ok", [inner], "batch"), _sql("ok", [], "batch")]
    assert opened_steps(outer, ["batch[0]/checker"]) == {id(outer[0]), id(inner)}
    with pytest.raises(TracekitError):
        opened_steps(outer, ["batch[2]"])
    assert opened_steps(outer, ["ghost"], strict=False) == set()


def test_a_deep_chain_folds_without_recursion() -> None:
    depth = 5000
    leaf: AgentStep = _sql("ok", [NodeStep("x")] * 30)
    for _ in range(depth):
        leaf = _sql("ok", [leaf])
    text = describe_agent_tree([leaf])
    assert text.count("\n") == depth + 1 and text.endswith("x x30")


def test_a_big_fanout_folds_to_a_few_lines() -> None:
    events = [node(0, "r", "plan")]
    for i in range(20_000):
        events += call(i + 1, i + 1.5, f"i{i}", f"c{i}", "r", "sql")
    events.append(enter(30_000, "z", "cz", "r", "sql"))
    events.append(exit_(30_001, "z", "cz", "r", "sql", 1, ok=False, status="error"))
    tree = build_forest(events).runs[0].steps
    assert describe_agent_tree(tree) == "plan\ndelegate -> sql (ok) x20001, 1 error"


def test_tree_from_a_store_folds_and_expands(tmp_path: Path) -> None:
    from tracekit.store import Store

    with Store(tmp_path / "s.duckdb") as store:
        store.ingest([GOLDEN / "nested.jsonl"])
    db = str(tmp_path / "s.duckdb")
    folded = run_cli("tree", "nest", "--db", db)
    assert folded.returncode == 0, folded.stderr
    # The file's tree, then why: the run's outcome and where it began, as from its file.
    assert folded.stdout == cli_golden(GOLDEN / "nested.tree.txt")
    assert folded.stdout.endswith("outcome degraded\nbegan in agent checker at depth 3 (LINT)\n")
    opened = run_cli("tree", "nest", "--db", db, "--expand", "batch[9]")
    assert "    check -> checker (error LINT, 1ms)" in opened.stdout.splitlines()


_NAMES = st.sampled_from(["a", "b"])


def _steps(depth: int = 3) -> st.SearchStrategy[list[Step]]:
    step: st.SearchStrategy[Step] = st.one_of(
        st.builds(NodeStep, _NAMES),
        st.builds(lambda agent, status: _sql(status, agent=agent), _NAMES,
                  st.sampled_from(["ok", "error"])),
    )  # fmt: skip
    for _ in range(depth):
        kids = st.lists(step, max_size=6)
        step = st.one_of(step, st.builds(lambda agent, k: _sql("ok", k, agent), _NAMES, kids))
    return st.lists(step, max_size=8)


@settings(max_examples=200, deadline=None)
@given(_steps(), st.integers(min_value=0, max_value=3))
def test_folding_keeps_every_step_and_every_status(tree: list[Step], threshold: int) -> None:
    counts: Counter[str] = Counter()
    shown = 0
    for _, group in Folder(threshold).walk(tree):
        shown += len(group.steps)
        counts += status_counts(group.steps)
    every = list(iter_steps([tree]))
    assert shown == len(every)
    assert counts == sum((status_counts([s]) for s in every), Counter())
