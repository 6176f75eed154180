"""`tracekit tree` through the installed console script: exit codes, stderr, stdin, gzip, colour."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from _tree_helpers import SAMPLES, call, cli_golden, node, run_cli, write_jsonl

from tracekit.cli.quick import quick_tree_args
from tracekit.events import ErrorInfo, RunEnd, RunStart

ORCHESTRATOR = SAMPLES / "agent_orchestrator.jsonl"
EXPECTED = (SAMPLES / "agent_orchestrator.tree.txt").read_text()


def test_prints_the_tree_and_exits_0() -> None:
    result = run_cli("tree", str(ORCHESTRATOR))
    assert (result.returncode, result.stdout, result.stderr) == (0, EXPECTED, "")


def test_reads_standard_input() -> None:
    result = run_cli("tree", "-", input=ORCHESTRATOR.read_bytes())
    assert (result.returncode, result.stdout) == (0, EXPECTED)


def test_reads_gzip_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    packed = gzip.compress(ORCHESTRATOR.read_bytes())
    path = tmp_path / "run.jsonl.gz"
    path.write_bytes(packed)
    assert run_cli("tree", str(path)).stdout == EXPECTED
    assert run_cli("tree", "-", input=packed).stdout == EXPECTED


def test_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    result = run_cli("tree", str(missing))
    assert result.returncode == 2
    assert result.stderr == f"Error: {missing}: no such file\n"
    assert result.stdout == ""


def test_unreadable_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli("tree", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"Error: {tmp_path}: is a directory, not a trace file"]


def test_bad_lines_are_skipped_and_named_on_stderr() -> None:
    result = run_cli("tree", str(SAMPLES / "crashed_run.jsonl"))
    assert result.returncode == 0
    assert result.stdout == cli_golden(SAMPLES / "crashed_run.tree.txt")
    path = SAMPLES / "crashed_run.jsonl"
    assert result.stderr.splitlines() == [
        "skipped 1 bad line of 6 (the tree shows every good line):",
        f"  {path}:6: truncated last line (not JSON: Input data was truncated)",
        "integrity: 1 enter without exit (running, or the writer crashed): inv-c",
    ]


def test_only_the_first_few_bad_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(ORCHESTRATOR.read_bytes() + b"junk\n" * 5)
    result = run_cli("tree", str(path))
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert lines[0] == "skipped 5 bad lines of 15 (the tree shows every good line):"
    assert len([line for line in lines if line.startswith(f"  {path}:")]) == 3
    assert lines[4] == "  ... and 2 more"


def test_strict_makes_a_bad_line_exit_2() -> None:
    path = SAMPLES / "crashed_run.jsonl"
    result = run_cli("tree", str(path), "--strict")
    assert result.returncode == 2
    assert result.stderr == (
        f"Error: {path}:6: truncated last line (not JSON: Input data was truncated)\n"
    )
    assert result.stdout == ""


def test_json_format() -> None:
    result = run_cli("tree", str(ORCHESTRATOR), "--format", "json")
    data = json.loads(result.stdout)
    steps = data["runs"][0]["steps"]
    assert steps[2]["agent"] == "sql" and steps[2]["durationMs"] == 11
    assert data["integrity"]["duplicates"] == 0


def test_run_option_picks_one_tree(tmp_path: Path) -> None:
    events = [
        RunStart(ts=0, runId="a", agent="front"),
        node(1, "a", "decide"),
        *call(2, 5, "i", "a/sql", "a", "sql"),
        node(3, "a/sql", "delegate/sql/say"),
        RunEnd(ts=6, runId="a", ok=True, durationMs=6),
        RunStart(ts=1, runId="b", agent="back"),
        RunEnd(ts=9, runId="b", ok=False, failure="delegation",
               error=ErrorInfo(code="AGENT_RECURSION", chain=["x", "y", "x"])),
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "two.jsonl", events)
    both = run_cli("tree", str(path))
    assert both.stdout == (
        "run a: front (ok, 6ms)\n  decide\n  delegate -> sql (ok, 3ms)\n    say\n\n"
        "run b: back (error AGENT_RECURSION: x -> y -> x, 8ms, failure: delegation)\n"
        "\nrun b: outcome failed:recursion: circle x -> y -> x (wrong by construction: it will"
        " happen again)\n  refused in agent x (AGENT_RECURSION)\n"
    )  # the trees, then why each run that did not end ok ended so, named
    assert run_cli("tree", str(path), "--run", "a").stdout.startswith("decide\n")
    assert run_cli("tree", str(path), "--run", "a/sql").stdout == "say\n"
    missing = run_cli("tree", str(path), "--run", "zzz")
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [f"Error: run zzz is not in {path}", "Runs in it: a, b."]


def test_max_depth_and_errors(tmp_path: Path) -> None:
    path = SAMPLES / "child_failure.jsonl"
    shallow = run_cli("tree", str(path), "--max-depth", "0")
    assert (
        shallow.stdout
        == "classify\nhand_over -> billing (error AGENT_FAILED <- REFUND_API_TIMEOUT in refunds"
        ' "refunds API did not answer in 3s", 10ms) [4 steps hidden]\n'
        + (SAMPLES / "child_failure.why.txt").read_text()  # why, whatever the depth shown
    )
    errors = run_cli("tree", str(SAMPLES / "escalation_desk.jsonl"), "--errors")
    assert (
        errors.stdout
        == "hand_over -> payments (refused AGENT_NOT_ALLOWED)\n"
        + (SAMPLES / "escalation_desk.why.txt").read_text()
    )
    assert run_cli("tree", str(path), "--max-depth", "-1").returncode == 2


def test_integrity_report_goes_to_stderr(tmp_path: Path) -> None:
    events = [node(1, "r", "decide"), *call(2, 5, "i", "c", "gone", "sql"), node(1, "r", "decide")]
    result = run_cli("tree", str(write_jsonl(tmp_path / "odd.jsonl", events)))
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "integrity: 1 missing parent run (orphans shown under their own header): gone",
        "integrity: 1 duplicate record, counted once",
    ]
    assert "orphans: run gone is not in this trace" in result.stdout


def test_no_color_and_color_options() -> None:
    plain = run_cli("tree", str(ORCHESTRATOR), "--color", "always", env={"NO_COLOR": "1"})
    assert "\x1b[32mok\x1b[0m" in plain.stdout  # an explicit option beats NO_COLOR
    auto = run_cli("tree", str(ORCHESTRATOR), "--color", "auto")
    assert "\x1b[" not in auto.stdout  # not a terminal, and NO_COLOR is set
    never = run_cli("tree", str(ORCHESTRATOR), "--color", "never", env={"NO_COLOR": ""})
    assert "\x1b[" not in never.stdout


def test_color_auto_on_a_terminal_honours_no_color() -> None:
    import os
    import pty
    import subprocess

    from _tree_helpers import TRACEKIT

    def on_tty(no_color: str | None) -> bytes:
        leader, follower = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        if no_color is not None:
            env["NO_COLOR"] = no_color
        proc = subprocess.run(
            [TRACEKIT, "tree", str(ORCHESTRATOR)], stdout=follower, env=env, timeout=60
        )
        os.close(follower)
        out = os.read(leader, 65536)
        os.close(leader)
        assert proc.returncode == 0
        return out

    assert b"\x1b[32mok" in on_tty(None)
    assert b"\x1b[" not in on_tty("1")


def test_escapes_terminal_control_in_names(tmp_path: Path) -> None:
    events = [*call(1, 2, "i", "c", "r", "bad\x1b]0;pwned\x07"), node(0, "r", "x\x1b[2J")]
    result = run_cli("tree", str(write_jsonl(tmp_path / "evil.jsonl", events)))
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "x\\x1b[2J" in result.stdout


def _no_records(result: object) -> str:
    """The error line of a tree with nothing to draw (exit 2, no traceback)."""
    assert result.returncode == 2, result.stderr  # type: ignore[attr-defined]
    assert result.stdout == "" and "Traceback" not in result.stderr  # type: ignore[attr-defined]
    first: str = result.stderr.splitlines()[0]  # type: ignore[attr-defined]
    return first


def test_an_empty_trace_says_so(tmp_path: Path) -> None:
    assert _no_records(run_cli("tree", "-", input=b"")) == (
        "Error: no trace records in -: standard input was empty"
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert _no_records(run_cli("tree", str(empty))) == (
        f"Error: no trace records in {empty}: it is empty"
    )


def test_a_saved_tree_or_a_pretty_printed_document_says_what_it_is(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(run_cli("tree", str(ORCHESTRATOR), "--format", "json").stdout)
    line = _no_records(run_cli("tree", str(saved)))
    assert line.startswith(f"Error: no trace records in {saved}: it holds trees"), line
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(saved.read_text()), indent=2))
    line = _no_records(run_cli("tree", str(pretty)))
    assert "one JSON document over" in line and "pretty-printed" in line, line
    assert "truncated" not in line


ODD = str(SAMPLES / "odd_trace.jsonl")
FAILING = str(SAMPLES / "child_failure.jsonl")


@pytest.mark.parametrize(
    "argv",
    [
        ["tree", ODD],
        ["tree", "--color", "always", ODD, "--max-depth", "1"],
        ["tree", FAILING, "--errors", "--strict", "--color", "never"],
        ["tree", "--format", "json", ODD],
        ["tree", ODD, "--format", "text", "--max-depth", "0", "--color", "auto"],
        ["tree", ODD, "--fold", "--no-fold"],
        ["tree", FAILING, "--fold", "--errors"],
    ],
)
def test_plain_command_lines_print_what_typer_parsing_prints(argv: list[str]) -> None:
    # The console script reads these without typer (tracekit.cli.quick); typer's runner must agree.
    from typer.testing import CliRunner

    from tracekit.cli.app import app

    assert quick_tree_args(argv) is not None
    typer_run = CliRunner().invoke(app, argv, env={"NO_COLOR": "1"})
    script_run = run_cli(*argv)
    assert (script_run.returncode, script_run.stdout, script_run.stderr) == (
        typer_run.exit_code,
        typer_run.stdout,
        typer_run.stderr,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["tree"],
        ["tree", "--help"],
        ["tree", "a.jsonl", "b.jsonl"],
        ["tree", "a.jsonl", "--max-depth", "-1"],
        ["tree", "a.jsonl", "--max-depth", " 1"],
        ["tree", "a.jsonl", "--color=never"],
        ["tree", "a.jsonl", "--color", "NEVER"],
        ["tree", "a.jsonl", "--run"],
        ["tree", "a.jsonl", "--run", "--errors"],
        ["tree", "a.jsonl", "--db", "x.duckdb"],
        ["tree", "a.jsonl", "--expand", "sql"],
        ["tree", "--", "a.jsonl"],
        ["tree", "-x.jsonl"],
        ["runs"],
    ],
)
def test_anything_unusual_is_left_to_typer(argv: list[str]) -> None:
    assert quick_tree_args(argv) is None


def test_a_usage_error_is_still_typers() -> None:
    result = run_cli("tree", ODD, "--max-depth", "-1")
    assert result.returncode == 2 and "--max-depth" in result.stderr and result.stdout == ""


def test_the_quick_reading_knows_the_same_choices_as_the_commands() -> None:
    # A choice the commands dropped must not be taken by the quick reading either.
    from tracekit.cli import quick as _cli_quick
    from tracekit.cli.app import ColorMode, FleetFormat, TreeFormat

    assert tuple(TreeFormat) == _cli_quick.TREE_FORMATS
    assert tuple(FleetFormat) == _cli_quick.FLEET_FORMATS
    assert tuple(ColorMode) == _cli_quick.COLORS


FRAMEWORK_RUN = (
    Path(__file__).parent / "frameworks" / "recordings" / "openai_agents" / "tool_raises.otlp.json"
)


def test_a_tool_that_raised_shows_in_text_errors_and_json_and_model_turns_on_request() -> None:
    text = run_cli("tree", str(FRAMEWORK_RUN))
    assert text.returncode == 0, text.stderr
    assert "    charge_card (error Error running tool)" in text.stdout.splitlines()
    assert "generation" not in text.stdout  # model turns are hidden by default
    errors = run_cli("tree", str(FRAMEWORK_RUN), "--errors")
    assert errors.stdout.splitlines()[-3] == "    charge_card (error Error running tool)"
    assert errors.stdout.splitlines()[-2:] == [
        "outcome failed:child",
        'began in agent billing at depth 2 (Error running tool): "tool charge_card: Error running'
        " tool: {'tool_name': 'charge_card', 'error': 'card declined'}\"",
    ]  # the tree, then why: the origin, its code and its message
    shown = run_cli("tree", str(FRAMEWORK_RUN), "--show", "llm")
    assert shown.stdout.count("generation") == 2
    bad = run_cli("tree", str(FRAMEWORK_RUN), "--show", "nothing")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    tree = json.loads(run_cli("tree", str(FRAMEWORK_RUN), "--format", "json").stdout)
    [triage] = tree["runs"][0]["steps"]
    billing = next(s for s in triage["steps"] if s["type"] == "agent")
    assert billing["edge"] == {"source": "handoff.span"}
    tool = next(s for s in billing["steps"] if s.get("call") == "tool")
    assert (tool["id"], tool["ok"], tool["error"]["code"]) == (
        "charge_card",
        False,
        "Error running tool",
    )
    llm = next(s for s in triage["steps"] if s.get("call") == "llm")
    assert llm["usage"] == {"inputTokens": 120, "outputTokens": 30, "models": ["scripted-triage"]}


_WHY_CASES = [
    SAMPLES / "child_failure.jsonl",
    SAMPLES / "recursion_circle.jsonl",
    SAMPLES / "escalation_desk.jsonl",
    FRAMEWORK_RUN,
    FRAMEWORK_RUN.parent.parent / "autogen" / "pingpong_silent.otlp.json",
    FRAMEWORK_RUN.parent.parent / "langfuse_observe" / "loop_limit.otlp.json",
    FRAMEWORK_RUN.parent.parent / "smolagents" / "managed_model_raises.otlp.json",
]


@pytest.mark.parametrize("path", _WHY_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_files_tree_says_why_as_the_stores_does(path: Path, tmp_path: Path) -> None:
    # One classification: the file's records and the store's rows say the same why.
    from tracekit.store import Store

    db = tmp_path / "s.duckdb"
    assert run_cli("ingest", "--db", str(db), str(path)).returncode == 0
    with Store(db) as store:
        [run_id] = store.sql("SELECT run_id FROM runs").run_id  # the root runs
    stored = run_cli("tree", run_id, "--db", str(db))
    read = run_cli("tree", str(path))
    assert stored.returncode == read.returncode == 0, (stored.stderr, read.stderr)
    why = read.stdout[read.stdout.index("\noutcome ") + 1 :]
    assert why and stored.stdout.endswith(why), (why, stored.stdout)
