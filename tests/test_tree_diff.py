"""Run comparison: hand-made pairs, properties, the installed command, JSON, HTML and the notebook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _tree_helpers import call, enter, exit_, node, run_cli, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.errors import TracekitError
from tracekit.events import ErrorInfo, Event, RunEnd, RunStart
from tracekit.notebook import open_run
from tracekit.tree.diff import Change, RunSide, Slower, diff_steps
from tracekit.tree.diff_view import describe_diff, diff_to_html
from tracekit.tree.model import AgentStep, NodeStep, Step

_IDS = iter(range(10**9))


def inv(agent: str, *steps: Step, status: str = "ok", ms: float = 10.0, node: str = "delegate",
        code: str | None = None) -> AgentStep:  # fmt: skip
    return AgentStep(
        agent=agent, node=node, kind="delegate", runId=f"r{next(_IDS)}", parentRunId="p",
        invocationId=f"i{next(_IDS)}", ok=status == "ok", status=status,  # type: ignore[arg-type]
        durationMs=ms, error=ErrorInfo(code=code) if code else None, steps=list(steps),
    )  # fmt: skip


def kinds(changes: list[Change]) -> list[tuple[str, str]]:
    return [(c.change, c.path) for c in changes]


def test_an_added_child() -> None:
    a = [inv("billing", inv("sql"))]
    b = [inv("billing", inv("sql"), inv("refunds", inv("ledger")))]
    found = diff_steps(a, b)
    assert kinds(found.changes) == [("added", "billing/refunds")]
    assert found.changes[0].invocations == 2 and found.changes[0].a is None


def test_a_removed_child() -> None:
    found = diff_steps([inv("billing", inv("sql"), inv("refunds"))], [inv("billing", inv("sql"))])
    assert kinds(found.changes) == [("removed", "billing/refunds")]


def test_a_status_change_names_both_sides() -> None:
    a = [inv("billing", inv("refunds"))]
    b = [inv("billing", inv("refunds", status="error", code="REFUND_API_TIMEOUT"), status="error",
             code="AGENT_FAILED")]  # fmt: skip
    found = diff_steps(a, b)
    assert kinds(found.changes) == [("status", "billing"), ("status", "billing/refunds")]
    change = found.changes[1]
    assert change.a is not None and change.b is not None
    assert (change.a.status, change.b.status, change.b.errorCode) == (
        "ok", "error", "REFUND_API_TIMEOUT",
    )  # fmt: skip


def test_a_wrapped_failure_names_where_it_began(tmp_path: Path) -> None:
    timeout = ErrorInfo(code="REFUND_API_TIMEOUT", message="no answer in 3s")
    refunds = inv("refunds", status="error")
    refunds.error = timeout
    billing = inv("billing", refunds, status="error")
    billing.error = ErrorInfo(code="AGENT_FAILED", cause=timeout)
    found = diff_steps([inv("billing", inv("refunds"))], [billing])
    side = found.changes[0].b
    assert side is not None and side.errorCode == "AGENT_FAILED"
    assert side.why == 'AGENT_FAILED <- REFUND_API_TIMEOUT in refunds "no answer in 3s"'
    assert "~ billing: ok -> error AGENT_FAILED <- REFUND_API_TIMEOUT in refunds" in describe_diff(
        found
    )


def test_reordered_siblings_are_no_change() -> None:
    a = [inv("front", inv("sql"), inv("orders", inv("stock")), inv("billing"))]
    b = [inv("front", inv("billing"), inv("sql"), inv("orders", inv("stock")))]
    assert diff_steps(a, b).changes == []


def test_duplicate_agent_names_pair_by_shape_then_order() -> None:
    # Two sql calls under one caller; B lost the one with a checker below it.
    a = [inv("front", inv("sql"), inv("sql", inv("checker")), inv("sql"))]
    b = [inv("front", inv("sql"), inv("sql"))]
    found = diff_steps(a, b)
    assert kinds(found.changes) == [("removed", "front/sql[1]")]
    assert found.changes[0].invocations == 2
    # Swapped in B: the shapes still find each other, so nothing changed.
    c = [inv("front", inv("sql", inv("checker")), inv("sql"), inv("sql"))]
    assert diff_steps(a, c).changes == []


def test_same_agent_from_another_node_is_another_call() -> None:
    found = diff_steps([inv("sql", node="ask")], [inv("sql", node="verify")])
    assert kinds(found.changes) == [("removed", "sql"), ("added", "sql")]


def test_a_slower_child_past_the_threshold() -> None:
    a = [inv("front", inv("sql", ms=10), inv("orders", ms=100), ms=200)]
    b = [inv("front", inv("sql", ms=40), inv("orders", ms=130), ms=230)]
    assert kinds(diff_steps(a, b).changes) == [("slower", "front/sql")]  # orders: +30%, front +15%
    assert kinds(diff_steps(a, b, slower=Slower.parse("25ms")).changes) == [
        ("slower", "front"), ("slower", "front/sql"), ("slower", "front/orders"),
    ]  # fmt: skip
    assert kinds(diff_steps(a, b, slower=Slower.parse("200%")).changes) == [("slower", "front/sql")]
    assert diff_steps(b, a).changes == []  # faster is not reported


@pytest.mark.parametrize("text", ["fast", "-5%", "%", "-3ms", "5 parsecs"])
def test_a_bad_threshold_is_an_error(text: str) -> None:
    with pytest.raises(TracekitError, match="not a percentage or a duration"):
        Slower.parse(text)


def test_text_json_and_html_escape_names() -> None:
    evil = "\x1b[31m<script>alert(1)</script>"
    found = diff_steps([], [inv(evil, node="ask\x07")], a_side=RunSide(runId="a\x1b"))
    text = describe_diff(found, color=True)
    assert "\x1b[31m<" not in text and "\\x1b[31m<script>" in text and "\\x07" in text
    assert "\x1b[32m+\x1b[0m" in text  # the sign is coloured, the name is not
    page = diff_to_html(found)
    assert "<script>" not in page and "&lt;script&gt;" in page and "\x1b" not in page
    data = json.loads(found.to_json())
    assert data["changes"][0]["agent"] == evil and data["counts"]["added"] == 1


# --- properties -------------------------------------------------------------

_AGENTS = st.sampled_from(["a", "b", "c"])


def _trees(depth: int = 3) -> st.SearchStrategy[list[Step]]:
    leaf = st.builds(
        lambda agent, node, status, ms: inv(agent, node=node, status=status, ms=ms),
        _AGENTS, st.sampled_from(["n", "m"]), st.sampled_from(["ok", "error"]),
        st.sampled_from([1.0, 50.0, 400.0]),
    )  # fmt: skip
    step: st.SearchStrategy[Step] = st.one_of(
        leaf, st.builds(NodeStep, st.sampled_from(["x", "y"]))
    )
    for _ in range(depth):
        children = st.lists(step, max_size=4)
        step = st.one_of(
            step,
            st.builds(lambda agent, kids, status: inv(agent, *kids, status=status),
                      _AGENTS, children, st.sampled_from(["ok", "error"])),
        )  # fmt: skip
    return st.lists(step, max_size=5)


@settings(max_examples=150, deadline=None)
@given(_trees())
def test_a_run_diffed_with_itself_is_empty(tree: list[Step]) -> None:
    assert diff_steps(tree, tree).changes == []


@settings(max_examples=200, deadline=None)
@given(_trees(), _trees())
def test_added_one_way_is_removed_the_other(a: list[Step], b: list[Step]) -> None:
    def listed(changes: list[Change], kind: str) -> list[tuple[str, str, int]]:
        return sorted((c.path, c.agent, c.invocations) for c in changes if c.change == kind)

    forward, backward = diff_steps(a, b).changes, diff_steps(b, a).changes
    assert listed(forward, "added") == listed(backward, "removed")
    assert listed(forward, "removed") == listed(backward, "added")
    assert len([c for c in forward if c.change == "status"]) == len(
        [c for c in backward if c.change == "status"]
    )


# --- files, the command, the notebook -------------------------------------------


def _run(run: str, *, refunds: str | None, sql_ms: float = 11) -> list[Event]:
    """A front desk run: a step, billing (with refunds, if any), then sql."""
    events: list[Event] = [RunStart(ts=0, runId=run, agent="front_desk"), node(1, run, "decide")]
    events.append(enter(2, f"{run}-b", f"{run}/b", run, "billing"))
    if refunds is not None:
        ok = refunds == "ok"
        events.append(enter(3, f"{run}-r", f"{run}/r", f"{run}/b", "refunds", node="escalate"))
        events.append(exit_(8, f"{run}-r", f"{run}/r", f"{run}/b", "refunds", 5, node="escalate",
                            ok=ok, status=refunds,
                            error=None if ok else ErrorInfo(code="REFUND_API_TIMEOUT")))  # fmt: skip
    events.append(exit_(9, f"{run}-b", f"{run}/b", run, "billing", 7))
    events += call(10, 10 + sql_ms, f"{run}-s", f"{run}/s", run, "sql")
    events.append(RunEnd(ts=200, runId=run, ok=True, durationMs=200))
    return events


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    before = write_jsonl(tmp_path / "before.jsonl", _run("good", refunds="ok"))
    after = write_jsonl(tmp_path / "after.jsonl", _run("bad", refunds="error", sql_ms=90))
    return before, after


def test_command_prints_the_changes(pair: tuple[Path, Path]) -> None:
    result = run_cli("diff", str(pair[0]), str(pair[1]))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "2 changes: 1 status, 1 slower (slower counts past +50% and +20ms)"
    assert lines[2:] == [
        "~ billing/refunds: ok -> error REFUND_API_TIMEOUT",
        "> sql: 11ms -> 90ms (+79ms, x8.2)",
    ]
    assert "\x1b[" not in result.stdout  # piped: plain


def test_command_json_with_run_ids_and_threshold(pair: tuple[Path, Path]) -> None:
    result = run_cli("diff", f"{pair[0]}#good", str(pair[1]), "--run", "good", "--run", "bad",
                     "--json", "--slower", "100ms")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["a"]["runId"] == "good" and data["b"]["runId"] == "bad"
    assert data["counts"] == {"added": 0, "removed": 0, "status": 1, "slower": 0}
    assert data["slower"] == {"ratio": None, "ms": 100.0}


def test_command_colours_only_when_asked(pair: tuple[Path, Path]) -> None:
    coloured = run_cli("diff", str(pair[0]), str(pair[1]), "--color", "always").stdout
    assert "\x1b[33m~\x1b[0m billing/refunds" in coloured
    plain = run_cli("diff", str(pair[0]), str(pair[1]), "--color", "always", "--no-color").stdout
    assert "\x1b[" not in plain


def test_command_errors_are_one_line(pair: tuple[Path, Path], tmp_path: Path) -> None:
    missing = run_cli("diff", str(pair[0]), f"{pair[1]}#nope")
    assert missing.returncode == 2 and "run nope is not in" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = run_cli("diff", str(pair[0]), str(pair[1]), "--slower", "soon")
    assert bad.returncode == 2 and "not a percentage or a duration" in bad.stderr
    alone = run_cli("diff", str(pair[0]))
    assert alone.returncode == 2 and "two runs" in alone.stderr


def test_notebook_diff_returns_a_view_with_html(pair: tuple[Path, Path]) -> None:
    before = open_run(pair[0])
    found = before.diff(pair[1])
    assert [(c.change, c.path) for c in found.changes] == [
        ("status", "billing/refunds"), ("slower", "sql"),
    ]  # fmt: skip
    page = found._repr_html_()
    assert 'class="tracekit-diff"' in page and "billing/refunds" in page
    assert str(found).startswith("diff: run good") and before.diff(before).changes == []


def test_one_call_removed_from_a_long_list_shifts_nothing() -> None:
    def batch(failing: int, calls: int = 300) -> AgentStep:
        return inv("batch", *[inv("sql", status="error" if n % 37 == failing else "ok")
                              for n in range(calls)])  # fmt: skip

    before = [batch(n % 37) for n in range(40)]
    after = [batch(n % 37) for n in range(40)]
    del after[12]  # a whole batch gone
    del after[3].steps[100]  # and one ok call of another
    after[30].steps[5].status = "cancelled"  # type: ignore[union-attr]
    found = diff_steps(before, after)
    # sql[100] to sql[113] of batch 3 were alike (ok, nothing below): any of them is the one gone.
    assert kinds(found.changes) == [
        ("removed", "batch[3]/sql[113]"), ("removed", "batch[12]"), ("status", "batch[30]/sql[5]"),
    ]  # fmt: skip
