"""`tracekit fleet` and `tracekit dashboard` through the installed command, in a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _fleet_helpers import ANSI, HOSTILE, MARKUP, T0, all_cases, hostile_run, write

from tracekit.store import Store

TRACEKIT = str(Path(sys.executable).parent / "tracekit")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    env.pop("TRACEKIT_DB", None)
    return subprocess.run(
        [TRACEKIT, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("cli")
    trace = write(base / "cases.jsonl", all_cases() + hostile_run("evil", t0=T0 + 60_000))
    with Store(base / "s.duckdb") as store:
        store.ingest(trace)  # not classified: the command classifies first
    return base / "s.duckdb"


def test_fleet_prints_every_section(db: Path) -> None:
    done = _run("fleet", "--db", str(db), cwd=db.parent)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in (
        "Runs: 10",
        "Recursion circles",
        "Failures by origin",
        "Degraded runs",
        "Latency by agent",
        "Delegations",
    ):
        assert title in out
    assert "billing -> orders -> billing" in out and "critic -> planner -> writer -> critic" in out
    assert "ACT" in out
    assert "invoices" in out and "TIMEOUT" in out


def test_fleet_escapes_names_in_the_terminal(db: Path) -> None:
    out = _run("fleet", "--db", str(db), "--color", "always", cwd=db.parent).stdout
    assert "\x1b[31malert" not in out  # the name's own escape is shown, not obeyed
    assert "red\\x1b[31malert" in out
    assert MARKUP in out  # rich markup in a name is text, not style
    assert HOSTILE in out


def test_fleet_json_has_every_row_and_filters(db: Path) -> None:
    done = _run(
        "fleet", "--db", str(db), "--format", "json", "--service", "desk-svc", cwd=db.parent
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["runs"] == 10 and data["window"]["service"] == "desk-svc"
    outcomes = {row["outcome"]: row["runs"] for row in data["outcomes"]}
    assert outcomes == {
        "ok": 1, "degraded": 1, "failed:recursion": 3, "failed:child": 2,
        "failed:refused": 1, "cancelled": 1, "incomplete": 1,
    }  # fmt: skip
    assert {c["circle"] for c in data["circles"]} == {
        "billing -> orders -> billing",
        "critic -> planner -> writer -> critic",
        f"{HOSTILE} -> {ANSI} -> {HOSTILE}",
    }
    since = json.loads(
        _run("fleet", "--db", str(db), "--format", "json", "--since", "1h", cwd=db.parent).stdout
    )
    assert since["runs"] == 0 and since["previous_runs"] == 0  # the hand-made runs are long past


def test_fleet_json_lists_every_row_the_table_leaves_out(tmp_path: Path) -> None:
    trace, db = tmp_path / "degraded.jsonl", tmp_path / "d.duckdb"
    rates = ["--failure-rate", "0", "--recursion-rate", "0", "--refusal-rate", "0"]
    rates += ["--cancel-rate", "0", "--crash-rate", "0", "--handled-rate", "1"]
    made = _run("simulate", "--runs", "40", *rates, "-o", str(trace), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert _run("ingest", str(trace), "--db", str(db), cwd=tmp_path).returncode == 0
    table = _run("fleet", "--db", str(db), cwd=tmp_path).stdout
    more = re.search(r"(\d+) more: --format json lists them all", table)
    assert more, table
    data = json.loads(_run("fleet", "--db", str(db), "--format", "json", cwd=tmp_path).stdout)
    assert len(data["degraded"]) == 40 == 15 + int(more.group(1))
    # Bounded: a page of the list, its total beside it, and the next page after it.
    page = ["fleet", "--db", str(db), "--format", "json", "--limit", "12"]
    first = json.loads(_run(*page, cwd=tmp_path).stdout)
    second = json.loads(_run(*page, "--offset", "12", cwd=tmp_path).stdout)
    assert first["totals"]["degraded"] == 40 and first["page"] == {"limit": 12, "offset": 0}
    assert first["degraded"] == data["degraded"][:12]
    assert second["degraded"] == data["degraded"][12:24]
    table = _run("fleet", "--db", str(db), "--limit", "5", cwd=tmp_path).stdout
    assert "5 of 40 shown: --limit and --offset page through them" in table


def test_fleet_and_dashboard_check_their_filters(db: Path, tmp_path: Path) -> None:
    for command in ("fleet", "dashboard"):
        done = _run(command, "--db", str(db), "--service", "desk-svx", cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        first, hint = done.stderr.splitlines()
        assert first == "Error: no run has service 'desk-svx'"
        assert hint.startswith("Did you mean 'desk-svc'? Known services: ")
        agent = _run(command, "--db", str(db), "--agent", "nobody", cwd=tmp_path)
        assert agent.returncode == 2
        assert agent.stderr.startswith("Error: no run has agent 'nobody'\nKnown agents: ")
        assert "\x1b" not in agent.stderr  # hostile names are escaped in the list


def test_fleet_bad_since_is_one_clear_line(db: Path) -> None:
    done = _run("fleet", "--db", str(db), "--since", "yesterday-ish", cwd=db.parent)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: --since 'yesterday-ish'")
    assert "Traceback" not in done.stderr


def test_dashboard_writes_the_default_file(db: Path, tmp_path: Path) -> None:
    done = _run("dashboard", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "dashboards" / "fleet-health.html"
    assert "dashboards/fleet-health.html" in done.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "Fleet health" in text
    assert HOSTILE not in text  # escaped wherever it appears


def test_fleet_on_a_missing_store_says_so_and_creates_nothing(tmp_path: Path) -> None:
    for command in ("fleet", "dashboard"):
        done = _run(command, "--db", "missing.duckdb", cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith(
            "Error: missing.duckdb: no store here"
        )
    assert not (tmp_path / "missing.duckdb").exists()


def test_plain_and_unusual_command_lines_give_the_same_report(db: Path) -> None:
    """Plain lines are read without typer (its parse costs 0.09 s); the rest go to typer."""
    plain = _run(
        "fleet", "--db", str(db), "--format", "json", "--service", "desk-svc", cwd=db.parent
    )
    typer_read = _run("fleet", f"--db={db}", "--format=json", "--service=desk-svc", cwd=db.parent)
    assert plain.returncode == typer_read.returncode == 0, plain.stderr + typer_read.stderr
    first, second = json.loads(plain.stdout), json.loads(typer_read.stdout)
    assert first["outcomes"] == second["outcomes"] and first["edges"] == second["edges"]
    bad = _run("fleet", "--db", str(db), "--format", "yaml", cwd=db.parent)
    assert bad.returncode == 2 and "yaml" in bad.stderr and "Traceback" not in bad.stderr


def test_fleet_gives_no_change_against_an_empty_window(tmp_path: Path) -> None:
    """Runs only 70-110 minutes ago: quiet in the last hour, none in the 3 hours before the last 3."""
    from datetime import UTC, datetime, timedelta

    start = (datetime.now(UTC) - timedelta(minutes=110)).strftime("%Y-%m-%dT%H:%M:%SZ")
    trace = tmp_path / "fleet.jsonl"
    made = _run(
        "simulate", "--runs", "60", "--seed", "3", "--start", start, "--window", "40m",
        "-o", str(trace), cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert _run("ingest", str(trace), "--db", "s.duckdb", cwd=tmp_path).returncode == 0
    quiet = _run("fleet", "--db", "s.duckdb", "--since", "1h", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert "Runs: 0 (previous window: 60)" in quiet.stdout
    assert " pt" not in quiet.stdout
    assert {_outcome_cells(quiet.stdout)[i] for i in (2, 4)} == {("-",) * 7}  # share, change
    first = _run("fleet", "--db", "s.duckdb", "--since", "3h", cwd=tmp_path)
    assert "Runs: 60 (no runs in the previous window)" in first.stdout
    assert " pt" not in first.stdout
    assert {_outcome_cells(first.stdout)[i] for i in (3, 4)} == {("-",) * 7}  # before, change
    data = json.loads(_run("fleet", "--db", "s.duckdb", "--since", "3h", "--format", "json",
                           cwd=tmp_path).stdout)  # fmt: skip
    assert data["previous_runs"] == 0
    assert {row["change"] for row in data["outcomes"]} == {None}


def _outcome_cells(out: str) -> list[tuple[str, ...]]:
    """The outcomes table's columns, each a tuple of its cells."""
    table = out.split("Runs:", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip("│").split("│") for line in table.splitlines()[4:-1]]
    return list(zip(*[[cell.strip() for cell in row] for row in rows], strict=True))
