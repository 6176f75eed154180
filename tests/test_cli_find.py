"""``tracekit find`` through the installed script: table, JSON lines, CSV, errors."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests._find_oracle import HOSTILE, hostile_trace
from tests._store_helpers import TRACEKIT, cli, line


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("cli-find")
    store = base / "h.duckdb"
    cli("ingest", str(hostile_trace(base / "h.jsonl")), db=store)
    return store


def test_table_escapes_and_quotes_names(db: Path) -> None:
    done = cli("find", "front > * ~> *", db=db)
    assert done.stdout.splitlines() == [
        "run_id  outcome  path                             statuses  invocation_ids",
        'r       ok       front > "a > b" ~> "say \\"hi\\""  ok ok ok  r i0 i1',
    ]
    assert done.stderr == "1 run, 1 path\n"
    red = cli("find", '"red\x1b[31m"', db=db).stdout
    assert "\x1b" not in red and '"red\\x1b[31m"' in red


def test_json_lines_keep_names_as_they_are(db: Path) -> None:
    rows = [json.loads(r) for r in cli("find", "front >> *", "--json", db=db).stdout.splitlines()]
    assert [r["agents"][1] for r in rows] == HOSTILE
    assert rows[0]["invocation_ids"] == ["r", "i0"]
    assert rows[0]["statuses"] == ["ok", "ok"]
    assert {r["outcome"] for r in rows} == {"ok"}
    assert json.loads(cli("find", "front", "--format", "json", db=db).stdout)["path"] == "front"


def test_csv_is_escaped_and_formula_safe(db: Path, tmp_path: Path) -> None:
    out = cli("find", "* ~> *", "--csv", db=db).stdout
    assert "\x1b" not in out and "red\\x1b[31m" in out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(HOSTILE) - 1
    assert rows[-1]["path"] == "日本 ~> \"=cmd|' /C calc'!A0\""
    # cells a spreadsheet would run: a run id, a root agent, a service, a path
    trace = tmp_path / "f.jsonl"
    trace.write_text(
        line({"type": "run.start", "ts": 1, "runId": "-2+3", "agent": "@root", "service": "=svc"})
        + line(
            {
                "type": "enter",
                "ts": 2,
                "invocationId": "+i",
                "runId": "+c",
                "parentRunId": "-2+3",
                "agent": "+kid",
            }
        )
    )
    store = tmp_path / "f.duckdb"
    cli("ingest", str(trace), db=store)
    (row,) = csv.DictReader(io.StringIO(cli("find", "@root > *", "--csv", db=store).stdout))
    assert (row["run_id"], row["path"], row["service"], row["root_agent"]) == (
        "'-2+3",
        "'@root > +kid",
        "'=svc",
        "'@root",
    )
    assert row["invocation_ids"] == "'-2+3 +i" and row["statuses"] == "running running"


def test_runs_and_limit(db: Path) -> None:
    done = cli("find", "front >> *", "--runs", db=db)
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "run_id",
        "service",
        "agent",
        "outcome",
        "status",
        "start_at",
        "duration_ms",
        "paths",
    ]
    assert lines[1].split()[:5] == ["r", "s", "front", "ok", "ok"] and lines[1].split()[-1] == "10"
    limited = cli("find", "front >> *", "--limit", "2", db=db)
    assert len(limited.stdout.splitlines()) == 3
    assert limited.stderr == "1 run, 10 paths (the first 2 shown; --limit N for more)\n"
    none = cli("find", "nobody", db=db)
    assert (none.stdout, none.stderr) == (
        "",
        "(no rows)\n0 runs, 0 paths\nno agent nobody in any run\n",
    )


def test_a_parse_error_points_at_the_column(db: Path) -> None:
    done = cli("find", "front >> [status=error]", db=db, check=False)
    assert done.returncode == 2
    message, caret = done.stderr.splitlines()
    assert message == (
        "Error: expected an agent, '*' or circle, found '[' at column 10: front >> [status=error]"
    )
    assert caret == " " * message.index("[status") + "^"


DOC = Path(__file__).parent.parent / "docs" / "find.md"


def doc_examples() -> list[tuple[str, list[str]]]:
    """Each ``$ tracekit ...`` line of the doc's console blocks, with the lines it shows."""
    examples: list[tuple[str, list[str]]] = []
    inside = False
    for text in DOC.read_text(encoding="utf-8").splitlines():
        if text.startswith("```"):
            inside = text == "```console"
        elif inside and text.startswith("$ "):
            examples.append((text[2:], []))
        elif inside:
            examples[-1][1].append(text)
    return examples


def test_the_doc_examples_print_what_the_doc_shows(tmp_path: Path) -> None:
    examples = doc_examples()
    assert sum(command.startswith("tracekit find") for command, _ in examples) >= 12
    for command, shown in examples:
        argv = shlex.split(command)
        assert argv[0] == "tracekit"
        done = subprocess.run(
            [TRACEKIT, *argv[1:]],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
            timeout=120,
        )
        assert done.stdout.splitlines() == shown, command


@pytest.mark.parametrize(
    "argv",
    [
        ["find", "front >> *"],
        ["find", "front >> *", "--json"],
        ["find", "--runs", "front >> *", "--csv", "--limit", "1"],
        ["find", "front > * ~> *", "--format", "csv", "--json", "--wait", "0.5"],
        ["find", "* >> *[status=error]", "--limit", "0", "--format", "table", "--limit", "2"],
        ["find", "nosuch", "--format", "json"],
    ],
)
def test_plain_command_lines_print_what_typer_parsing_prints(argv: list[str], db: Path) -> None:
    # The console script runs these without typer (tracekit.cli.quick); typer's runner must agree.
    from typer.testing import CliRunner

    from tracekit.cli.app import app
    from tracekit.cli.quick import quick_find_args

    argv = [*argv, "--db", str(db)]
    assert quick_find_args(argv) is not None
    env = {"NO_COLOR": "1", "COLUMNS": "100"}
    typer_run = CliRunner().invoke(app, argv, env=env)
    script = subprocess.run(
        [TRACEKIT, *argv], capture_output=True, text=True, env={**os.environ, **env}
    )
    assert (script.returncode, script.stdout, script.stderr) == (
        typer_run.exit_code,
        typer_run.stdout,
        typer_run.stderr,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["find"],
        ["find", "--help"],
        ["find", "a", "b"],
        ["find", "a", "--limit", "-1"],
        ["find", "a", "--limit=3"],
        ["find", "a", "--wait", "1e3"],
        ["find", "a", "--format", "yaml"],
        ["find", "-a"],
        ["find", "a", "--db"],
        ["find", "a", "--bogus"],
    ],
)
def test_other_command_lines_go_to_typer(argv: list[str]) -> None:
    from tracekit.cli.quick import quick_find_args

    assert quick_find_args(argv) is None
