"""The fleet report's loop cost: every circle, split by how it stopped, against hand sums."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _loops_helpers import HOSTILE_CIRCLE, HOSTILE_SERVICE, LOOPS, T0, hand_sum, loop_store
from _store_helpers import TRACEKIT

from tracekit.fleet import fleet_report, loop_costs
from tracekit.fleet.text import render_fleet
from tracekit.store import Store

BILLING = "billing -> refunds -> billing"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return loop_store(tmp_path_factory.mktemp("fleet-loops"))


def _loops(db: Path, **filters: Any) -> list[dict[str, Any]]:
    with Store(db, read_only=True) as store:
        return fleet_report(store, **filters).tables["loops"].records()


def test_every_circle_and_stop_is_the_hand_sum(db: Path) -> None:
    rows = _loops(db)
    assert {(r["circle"], r["stopped"]) for r in rows} == {(r[1], r[3]) for r in LOOPS}
    for row in rows:
        expected = hand_sum(row["circle"], row["stopped"])
        for column, value in expected.items():
            assert row[column] == (pytest.approx(value) if value is not None else None), column


def test_per_run_is_the_total_over_the_runs(db: Path) -> None:
    rows = {(r["circle"], r["stopped"]): r for r in _loops(db)}
    silent = rows[(BILLING, "silent")]
    assert silent["runs"] == 2 and silent["tokens_per_run"] == (3000 + 300 + 5000 + 500) / 2
    assert silent["model_calls_per_run"] == (6 + 10) / 2
    assert silent["ms_per_run"] == (700 + 1100) / 2
    assert silent["limit_codes"] == "max_turns"
    # r-ok3's finished loop reported no usage: it counts as none, its run still counts
    finished = rows[(BILLING, "finished")]
    assert finished["runs"] == 2 and finished["tokens_per_run"] == (4000 + 400) / 2


def test_costliest_circle_first_and_silent_beside_refused(db: Path) -> None:
    order = [(r["circle"], r["stopped"]) for r in _loops(db)]
    assert order == [
        (BILLING, "silent"),
        (BILLING, "finished"),
        ("planner -> critic -> planner", "limit"),
        (HOSTILE_CIRCLE, "refused"),
    ]


def test_the_window_and_service_choose_the_runs(db: Path) -> None:
    now = datetime.fromtimestamp((T0 + 3.5 * 3_600_000) / 1000, UTC)
    windowed = _loops(db, since="2h", now=now)  # r-ok2 and r-ok3 started in it
    assert sorted((r["circle"], r["stopped"], r["runs"]) for r in windowed) == [
        (BILLING, "finished", 1),
        (BILLING, "silent", 1),
        ("planner -> critic -> planner", "limit", 1),
    ]
    assert [r["circle"] for r in _loops(db, service=HOSTILE_SERVICE)] == [HOSTILE_CIRCLE]
    # intake is invoked by r-rec and r-crash only: the refused loop is r-rec's
    assert [(r["circle"], r["stopped"]) for r in _loops(db, agent="intake")] == [
        (HOSTILE_CIRCLE, "refused")
    ]


def test_the_frame_has_the_columns_the_docs_name(db: Path) -> None:
    with Store(db, read_only=True) as store:
        frame = loop_costs(store)
    assert list(frame.columns) == [
        "circle", "stopped", "runs", "revisits", "invocations", "model_calls", "input_tokens",
        "output_tokens", "duration_ms", "tokens_per_run", "model_calls_per_run", "ms_per_run",
        "limit_codes",
    ]  # fmt: skip
    assert frame["input_tokens"].sum() == sum(r[8] for r in LOOPS if r[8] is not None)


def test_the_text_table_escapes_names(db: Path) -> None:
    with Store(db, read_only=True) as store:
        text = render_fleet(fleet_report(store), width=240)
    section = text[text.index("Loop cost") : text.index("Failures by origin")]
    assert "silent" in section and "refused" in section and "finished" in section
    assert 'or"ders\\x0a{x=' in section  # the line feed shown as \x0a, not a new line
    assert not any(line.startswith("{x=") for line in text.splitlines())


def test_json_has_the_loops_and_their_total(db: Path) -> None:
    out = subprocess.run(
        [TRACEKIT, "fleet", "--db", str(db), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    report = json.loads(out)
    assert report["totals"]["loops"] == 4
    assert {(r["circle"], r["stopped"]) for r in report["loops"]} == {(r[1], r[3]) for r in LOOPS}
    hostile = next(r for r in report["loops"] if r["stopped"] == "refused")
    assert hostile["circle"] == HOSTILE_CIRCLE and hostile["input_tokens"] == 100
