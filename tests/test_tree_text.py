"""describe: the wording of every status, headers, depth, errors-only, colour, escaping."""

from __future__ import annotations

import pytest
from _tree_helpers import call, enter, exit_, node

from tracekit import agent_tree, build_forest, describe_agent_tree, describe_forest
from tracekit._util.text import escape, format_ms
from tracekit.cli.tree import render_forest
from tracekit.errors import RunNotFoundError, TracekitError, TraceReadError
from tracekit.events import ErrorInfo
from tracekit.tree.forest import Integrity
from tracekit.tree.text import describe_bad_lines, describe_integrity

RECURSION = ErrorInfo(code="AGENT_RECURSION", chain=["orders", "billing", "orders"])


def one_line(*events: object) -> str:
    return describe_agent_tree(agent_tree(events))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exit_kw", "enter_kw", "expected"),
    [
        ({}, {}, "delegate -> sql (ok, 11ms)"),
        ({"status": "error", "error": ErrorInfo(code="AGENT_FAILED")}, {},
         "delegate -> sql (error AGENT_FAILED, 11ms)"),
        ({"status": "refused", "error": RECURSION}, {},
         "delegate -> sql (refused AGENT_RECURSION: orders -> billing -> orders)"),
        ({"status": "refused", "error": ErrorInfo(code="AGENT_NOT_ALLOWED")}, {},
         "delegate -> sql (refused AGENT_NOT_ALLOWED)"),
        ({}, {"kind": "handoff", "node": "transfer"}, "transfer -> sql (handoff, ok, 11ms)"),
        ({}, {"kind": "subagent", "node": "spawn"}, "spawn -> sql (subagent, ok, 11ms)"),
        ({"status": "pending"}, {}, "delegate -> sql (pending)"),
        ({"status": "cancelled"}, {}, "delegate -> sql (cancelled, 11ms)"),
        ({"status": "error"}, {}, "delegate -> sql (error, 11ms)"),
        ({}, {"node": None}, "-> sql (ok, 11ms)"),
        ({}, {"node": "hand_over/billing/escalate"}, "escalate -> sql (ok, 11ms)"),
    ],
)  # fmt: skip
def test_agent_line_wording(exit_kw: dict, enter_kw: dict, expected: str) -> None:
    start = enter(0, "i", "c", "r", "sql", **enter_kw)
    end = exit_(11, "i", "c", "r", "sql", 11, **exit_kw)
    assert one_line(start, end) == expected


def test_running_has_no_duration() -> None:
    assert one_line(enter(0, "i", "c", "r", "sql")) == "delegate -> sql (running)"


def test_failed_node_step() -> None:
    assert one_line(node(1, "r", "refund", ok=False, durationMs=3)) == "refund (error)"


@pytest.mark.parametrize(
    ("ms", "text"), [(11, "11ms"), (11.4, "11ms"), (0, "0ms"), (0.4, "0.4ms"), (9999, "9999ms"), (12500, "12.5s")]
)  # fmt: skip
def test_format_ms(ms: float, text: str) -> None:
    assert format_ms(ms) == text


def test_escape_leaves_printable_text_alone() -> None:
    assert escape("ünïcode name") == "ünïcode name"
    assert escape("a\nb\tc\x1b[0m\x9b\u2028") == "a\\x0ab\\x09c\\x1b[0m\\x9b\\u2028"


def test_errors_only_keeps_the_paths_to_a_failure() -> None:
    events = [
        node(1, "r", "decide"),
        *call(2, 9, "ok-call", "c1", "r", "fine"),
        node(3, "c1", "quiet"),
        enter(10, "bad", "c2", "r", "billing"),
        node(11, "c2", "sort"),
        enter(12, "worse", "c3", "c2", "refunds", node="escalate"),
        exit_(14, "worse", "c3", "c2", "refunds", 2, node="escalate", status="error",
              error=ErrorInfo(code="BOOM")),
        exit_(15, "bad", "c2", "r", "billing", 5, status="error", error=ErrorInfo(code="AGENT_FAILED")),
    ]  # fmt: skip
    text = describe_agent_tree(agent_tree(events), errors_only=True)
    assert text == (
        "delegate -> billing (error AGENT_FAILED <- BOOM in refunds, 5ms)\n"
        "  escalate -> refunds (error BOOM, 2ms)"
    )


def test_max_depth_hides_deeper_steps_and_counts_them() -> None:
    events = [*call(1, 9, "a", "c1", "r", "outer"), *call(2, 8, "b", "c2", "c1", "inner"),
              node(3, "c2", "deep"), node(4, "c1", "mid")]  # fmt: skip
    tree = agent_tree(events)
    assert describe_agent_tree(tree, max_depth=0) == "delegate -> outer (ok, 8ms) [3 steps hidden]"
    assert describe_agent_tree(tree, max_depth=1) == (
        "delegate -> outer (ok, 8ms)\n  delegate -> inner (ok, 6ms) [1 steps hidden]\n  mid"
    )


def test_color_paints_status_words_only() -> None:
    events = [*call(1, 3, "i", "c", "r", "sql"), node(0, "r", "decide")]
    text = describe_agent_tree(agent_tree(events), color=True)
    assert text == "decide\ndelegate -> sql (\x1b[32mok\x1b[0m, 2ms)"


def test_forest_of_one_root_has_no_header_and_orphans_do() -> None:
    assert describe_forest(build_forest([node(1, "r", "a")])) == "a"
    orphan = describe_forest(build_forest(call(1, 2, "i", "c", "gone", "sql")))
    assert orphan == (
        "orphans: run gone is not in this trace, but these invocations name it as parent\n"
        "  delegate -> sql (ok, 1ms)"
    )


def test_inferred_root_header() -> None:
    forest = build_forest([node(1, "a", "x"), node(2, "b", "y")])
    assert describe_forest(forest).splitlines()[0] == "run a: agent unknown (no run.start/run.end)"


def test_render_forest_unknown_run_is_a_run_not_found_error() -> None:
    forest = build_forest([node(1, "a", "x")])
    with pytest.raises(RunNotFoundError, match=r"run b is not in t\.jsonl") as info:
        render_forest(forest, run_id="b", source="t.jsonl")
    assert info.value.hint == "Runs in it: a."
    assert (info.value.run_id, info.value.source) == ("b", "t.jsonl")
    assert isinstance(info.value, TracekitError)


def test_integrity_lines() -> None:
    report = Integrity(
        orphanRuns=["p"],
        exitsWithoutEnter=["x1", "x2", "x3", "x4"],
        entersWithoutExit=["e"],
        duplicates=1,
        conflicts=["i"],
        cycles=[["a", "b", "a"]],
        sharedRuns=["c"],
    )
    assert describe_integrity(report) == [
        "integrity: 1 missing parent run (orphans shown under their own header): p",
        "integrity: 4 exits without enter (kept, marked): x1, x2, x3 and 1 more",
        "integrity: 1 enter without exit (running, or the writer crashed): e",
        "integrity: 1 duplicate record, counted once",
        "integrity: 1 id given twice with different content (first kept): i",
        "integrity: cycle in parent links (cut open): a -> b -> a",
        "integrity: 1 child run claimed by two invocations: c",
    ]
    assert describe_integrity(Integrity()) == []


def test_bad_line_summary_escapes_the_text() -> None:
    errors = [TraceReadError("t\x1b.jsonl", 3, "x", "not JSON")]
    assert describe_bad_lines(errors, 9) == [
        "skipped 1 bad line of 9 (the tree shows every good line):",
        "  t\\x1b.jsonl:3: not JSON",
    ]


def test_errors_only_drops_runs_where_nothing_failed() -> None:
    events = [
        node(1, "a", "fine"),
        node(2, "b", "x"),
        *call(3, 4, "i", "c", "b", "sql", status="error", error=ErrorInfo(code="BOOM")),
    ]
    assert describe_forest(build_forest(events), errors_only=True) == (
        "run b: agent unknown (no run.start/run.end)\n  delegate -> sql (error BOOM, 1ms)"
    )
