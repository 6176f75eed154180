"""A run against its fleet: the paths rare for its root agent, and the usual ones it lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fleet_helpers import T0, C, run_events, write
from _tree_helpers import run_cli

from tracekit.errors import RunNotFoundError, TracekitError
from tracekit.fleet.rare import against_fleet
from tracekit.store import Store

OK = {"ok": True}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 usual desk runs (billing -> refunds, sql), one odd one, and a lone triage run."""
    base = tmp_path_factory.mktemp("rare")
    events = []
    for n in range(20):
        calls = [C("billing", [C("refunds")]), C("sql")]
        if n < 3:  # seen in 3 of 21 runs: not rare at 5%, rare at 20%
            calls.append(C("cache"))
        events += run_events(f"usual-{n}", "desk", calls, end=OK, t0=T0 + n * 1000)
    odd = [C("billing", [C("fraud", [C("<b>x</b>")])]), C("sql"), C("cache")]
    events += run_events("odd", "desk", odd, end=OK, t0=T0 + 50_000)
    events += run_events("lone", "triage", [C("sql")], end=OK, t0=T0 + 60_000)
    path = base / "s.duckdb"
    with Store(path) as db:
        db.ingest([write(base / "runs.jsonl", events)])
    return path


def test_rare_and_missing_paths(store: Path) -> None:
    with Store(store, read_only=True) as db:
        found = against_fleet(db, "odd")
    assert found.agent == "desk" and found.runs == 20
    assert [p.path for p in found.rare] == [["billing", "fraud"], ["billing", "fraud", "<b>x</b>"]]
    assert [(p.path, p.runs, p.share) for p in found.missing] == [(["billing", "refunds"], 20, 1.0)]
    with Store(store, read_only=True) as db:
        wider = against_fleet(db, "odd", rare_below=0.2)
    assert ["cache"] in [p.path for p in wider.rare]


def test_a_usual_run_has_nothing_rare(store: Path) -> None:
    with Store(store, read_only=True) as db:
        found = against_fleet(db, "usual-10")
    assert found.rare == [] and found.missing == []


def test_errors(store: Path) -> None:
    with Store(store, read_only=True) as db:
        with pytest.raises(RunNotFoundError):
            against_fleet(db, "nope")
        with pytest.raises(TracekitError, match="no other run of triage"):
            against_fleet(db, "lone")


def test_command_text_json_and_escaping(store: Path) -> None:
    result = run_cli("diff", "odd", "--against-fleet", "--db", str(store))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "run odd (desk) against 20 other runs of desk",
        "rare here (in fewer than 5% of them):",
        "  billing/fraud: in 0 of 20 runs (0.0%)",
        "  billing/fraud/<b>x</b>: in 0 of 20 runs (0.0%)",
        "usual (in at least 50% of them) but missing here:",
        "  billing/refunds: in 20 of 20 runs (100.0%)",
    ]
    data = json.loads(
        run_cli(
            "diff", "odd", "--against-fleet", "--db", str(store), "--json", "--rare", "20%"
        ).stdout
    )
    assert data["rareBelow"] == 0.2 and ["cache"] in [p["path"] for p in data["rare"]]
    bad = run_cli("diff", "odd", "--against-fleet", "--db", str(store), "--rare", "lots")
    assert bad.returncode == 2 and "not a share" in bad.stderr
    lone = run_cli("diff", "odd", "--against-fleet")
    assert lone.returncode == 2 and "--db" in lone.stderr


def test_command_diffs_two_runs_of_a_store(store: Path) -> None:
    result = run_cli("diff", "usual-10", "odd", "--db", str(store))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2:] == [
        "- billing/refunds: delegate -> refunds (ok, 1ms)",
        "+ billing/fraud: delegate -> fraud (ok, 3ms), 2 invocations",
        "+ cache: delegate -> cache (ok, 1ms)",
    ]
