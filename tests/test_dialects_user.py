"""A user's dialect file on a plain OpenTelemetry app, through the installed ``tracekit``.

The app (tests/_plain_app.py) writes agents as ``agent:<name>`` spans with
``app.agent``, tools as ``tool:<name>``, and refuses a loop with its own
``LoopRefused``: no GenAI attribute at all. The truth is what its code did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _plain_app import DIALECT, chain_run, loop_run

TRACEKIT = str(Path(sys.executable).parent / "tracekit")


def tracekit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    return subprocess.run(
        [TRACEKIT, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def rows_of(tree: dict[str, Any]) -> list[tuple[str, str | None, bool, tuple[str, ...]]]:
    """Each invocation as (agent, caller, ok, tools), in start order."""
    out: list[tuple[float, tuple[str, str | None, bool, tuple[str, ...]]]] = []
    stack: list[tuple[dict[str, Any], str | None]] = [(run, None) for run in tree["runs"]]
    while stack:
        step, caller = stack.pop()
        tools = tuple(
            s["id"] for s in step["steps"] if s["type"] == "node" and s.get("call") == "tool"
        )
        out.append((step.get("startTs") or 0.0, (step["agent"], caller, step["ok"], tools)))
        stack.extend((s, step["agent"]) for s in step["steps"] if s["type"] == "agent")
    return [row for _, row in sorted(out, key=lambda pair: pair[0])]


def truth_rows(
    invocations: list[dict[str, Any]],
) -> list[tuple[str, str | None, bool, tuple[str, ...]]]:
    return [
        (
            i["agent"],
            invocations[i["parent"]]["agent"] if i["parent"] is not None else None,
            i["ok"],
            tuple(t["name"] for t in i["tools"]),
        )
        for i in invocations
    ]


@pytest.mark.parametrize("run", [chain_run, loop_run], ids=["chain", "loop"])
def test_the_dialect_file_gives_the_tree_of_what_happened(run: Any, tmp_path: Path) -> None:
    path, app = run(tmp_path / "app.otlp.json")
    dialect = tmp_path / "app.toml"
    dialect.write_text(DIALECT)
    done = tracekit("tree", str(path), "--dialect", str(dialect), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert rows_of(json.loads(done.stdout)) == truth_rows(app.invocations)
    assert "no recognised agent" not in done.stderr


def test_the_loop_refusal_is_a_recursion_in_the_store(tmp_path: Path) -> None:
    loop, _ = loop_run(tmp_path / "loop.otlp.json")
    chain, _ = chain_run(tmp_path / "chain.otlp.json")
    (tmp_path / "app.toml").write_text(DIALECT)
    db = str(tmp_path / "s.duckdb")
    done = tracekit(
        "ingest", str(loop), str(chain), "--dialect", str(tmp_path / "app.toml"), "--db", db
    )
    assert done.returncode == 0, done.stderr
    query = "SELECT agent, outcome, invocations, circle FROM runs ORDER BY outcome"
    out = tracekit("sql", query, "--db", db, "--format", "json").stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["agent"], r["outcome"], r["invocations"], r["circle"]) for r in rows] == [
        ("triage", "failed:recursion", 3, "billing -> refunds -> billing"),
        ("triage", "ok", 2, None),
    ]


def test_tracekit_toml_in_the_working_directory_is_read(tmp_path: Path) -> None:
    path, app = chain_run(tmp_path / "app.otlp.json")
    (tmp_path / "tracekit.toml").write_text(DIALECT)
    done = tracekit("tree", path.name, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert rows_of(json.loads(done.stdout)) == truth_rows(app.invocations)
    assert "inferred" not in done.stderr  # declared, not guessed


def test_pyproject_tool_tracekit_is_read(tmp_path: Path) -> None:
    path, app = chain_run(tmp_path / "app.otlp.json")
    inline = DIALECT.replace("[dialect]", "[tool.tracekit.dialect]")
    for section in ("agents", "tools", "errors"):
        inline = inline.replace(f"[{section}]", f"[tool.tracekit.{section}]")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n\n' + inline)
    done = tracekit("tree", path.name, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert rows_of(json.loads(done.stdout)) == truth_rows(app.invocations)


def test_a_bad_dialect_file_is_one_error_line_with_its_file_and_line(tmp_path: Path) -> None:
    path, _ = chain_run(tmp_path / "app.otlp.json")
    bad = tmp_path / "bad.toml"
    bad.write_text('[dialect]\nname = "x"\n\n[agents]\nnames = "agent:*"\nnmae_from = ["a"]\n')
    for command in (["tree", str(path)], ["ingest", str(path), "--db", str(tmp_path / "s.duckdb")]):
        done = tracekit(*command, "--dialect", str(bad))
        assert done.returncode != 0
        first = done.stderr.splitlines()[0]
        assert first.startswith(f"Error: {bad}:6: agents.nmae_from: unknown key"), done.stderr
        assert "Traceback" not in done.stderr


def test_a_dialect_file_that_is_no_toml_names_its_line(tmp_path: Path) -> None:
    path, _ = chain_run(tmp_path / "app.otlp.json")
    bad = tmp_path / "bad.toml"
    bad.write_text('[agents]\nnames = ["agent:*"\n')
    done = tracekit("tree", str(path), "--dialect", str(bad))
    assert done.returncode != 0
    assert done.stderr.startswith(f"Error: {bad}:2: not TOML"), done.stderr


def test_spans_with_no_agent_evidence_are_said_in_one_line(tmp_path: Path) -> None:
    path, _ = chain_run(tmp_path / "app.otlp.json")
    text = path.read_text()
    for word in ("agent:", "tool:", "app.agent"):
        text = text.replace(word, "step-" if word.endswith(":") else "app.who")
    plain = tmp_path / "plain.otlp.json"
    plain.write_text(text)
    done = tracekit("tree", str(plain))
    assert done.returncode == 0, done.stderr
    [note] = [line for line in done.stderr.splitlines() if "no recognised agent" in line]
    assert "--dialect FILE" in note


def test_dialect_suggest_writes_a_declaration_that_reads_the_app(tmp_path: Path) -> None:
    path, app = loop_run(tmp_path / "app.otlp.json")
    done = tracekit("dialect", "suggest", str(path))
    assert done.returncode == 0, done.stderr
    assert 'name_from = ["app.agent"]' in done.stdout
    assert "LoopRefused" in done.stdout  # named as a candidate, left to the user
    suggested = tmp_path / "suggested.toml"
    suggested.write_text(done.stdout)
    tree = tracekit("tree", str(path), "--dialect", str(suggested), "--format", "json")
    assert tree.returncode == 0, tree.stderr
    assert [r[:2] for r in rows_of(json.loads(tree.stdout))] == [
        r[:2] for r in truth_rows(app.invocations)
    ]
