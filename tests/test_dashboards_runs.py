"""Huge runs on pages: the lazy, folded tree (tracekit.tree.lazy_html) in a notebook cell and on
the dashboard's run section, and a real headless Chromium that opens one and expands a branch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _tree_helpers import write_jsonl
from test_dashboard import CHROMIUM, FLAGS

from tracekit.dashboards.page import write_dashboard
from tracekit.events import Enter, ErrorInfo, Event, Exit, Node, RunEnd, RunStart
from tracekit.notebook import open_run
from tracekit.store import Store
from tracekit.tree import build_forest
from tracekit.tree.html import tree_to_html
from tracekit.tree.lazy_html import lazy_tree_html
from tracekit.tree.model import NodeStep

HOSTILE = "<img src=x onerror=alert(1)>"


def huge_run(batches: int, calls: int, run: str = "huge") -> list[Event]:
    """orchestrator -> batch xN -> sql xK (one sql in 97 fails, caught): a degraded run."""
    events: list[Event] = [RunStart(ts=0, runId=run, agent="orchestrator")]
    ts = 0.0
    for b in range(batches):
        batch = f"{run}/b{b}"
        ts += 1
        start = ts
        events.append(Enter(ts=ts, invocationId=f"{run}-b{b}", runId=batch, parentRunId=run,
                            agent="batch", node="fan_out"))  # fmt: skip
        events.append(Node(ts=ts, runId=batch, id="plan"))
        for c in range(calls):
            ts += 1
            failed = (b * calls + c) % 97 == 96
            common = dict(invocationId=f"{run}-s{b}.{c}", runId=f"{batch}/s{c}", parentRunId=batch,
                          agent=HOSTILE if c == 0 else "sql", node="query")  # fmt: skip
            events.append(Enter(ts=ts, **common))  # type: ignore[arg-type]
            events.append(Exit(ts=ts + 0.5, durationMs=0.5, ok=not failed,
                               status="error" if failed else "ok",
                               error=ErrorInfo(code="SQL_TIMEOUT") if failed else None,
                               **common))  # type: ignore[arg-type]  # fmt: skip
        ts += 1
        events.append(Exit(ts=ts, invocationId=f"{run}-b{b}", runId=batch, parentRunId=run,
                           agent="batch", node="fan_out", durationMs=ts - start))  # fmt: skip
    events.append(RunEnd(ts=ts + 1, runId=run, ok=True, durationMs=ts + 1))
    return events


def test_a_folded_tree_carries_its_lines_as_json_not_as_markup() -> None:
    tree = build_forest(huge_run(30, 300)).runs[0].steps
    page = tree_to_html(tree)  # a sibling list of 300: folded, so lazy
    assert 'class="tracekit-tree tk-lazy"' in page and "<li>" not in page and "<li " not in page
    data = re.search(r'<script type="application/json" class="tk-data">(.*?)</script>', page)
    assert data is not None
    rows = json.loads(data.group(1))["rows"]
    assert [r[:5] for r in rows] == [
        [-1, "fan_out", "batch", None, "ok"],
        [0, "plan", None, None, "ok"],
        [0, "query", HOSTILE, None, "ok"],
        [0, "query", "sql", None, "ok"],
    ]
    failed = sum(isinstance(e, Exit) and e.agent == "sql" and e.status == "error"
                 for e in huge_run(30, 300))  # fmt: skip
    assert rows[0][5] == "x30" and rows[3][5] == f"x299 (8970 in all), {failed} errors"
    assert HOSTILE not in page and "\\u003cimg" in page  # inert inside the JSON


def test_expand_shows_one_member_of_a_folded_group() -> None:
    tree = build_forest(huge_run(30, 50)).runs[0].steps
    data = re.search(r'class="tk-data">(.*?)</script>', tree_to_html(tree, expand=["batch[4]"]))
    assert data is not None
    rows = json.loads(data.group(1))["rows"]
    tops = [r[5] for r in rows if r[0] == -1]
    assert tops[0] == "x29" and tops[1].endswith("ms")  # 29 folded, the fifth on its own


def test_small_trees_keep_the_static_view() -> None:
    page = tree_to_html([NodeStep("a"), NodeStep("b")])
    assert "tk-lazy" not in page and "<script" not in page
    assert "tk-lazy" in tree_to_html([NodeStep("a")], lazy=True)


def test_a_cap_says_the_lines_were_cut() -> None:
    tree = [NodeStep(f"step {n}") for n in range(50)]  # nothing repeats: nothing folds
    page = lazy_tree_html(tree, max_lines=10)
    assert "the first 10 folded lines" in page


def test_notebook_draws_a_huge_run_lazily(tmp_path: Path) -> None:
    run = open_run(write_jsonl(tmp_path / "huge.jsonl", huge_run(30, 200)))
    page = run._repr_html_()
    assert "tk-lazy" in page and len(page) < 20_000
    assert str(run).splitlines()[1:] == [
        "fan_out -> batch (ok) x30",
        "  plan",
        f"  query -> {HOSTILE} (ok), 1 error",
        "  query -> sql (ok) x199 (5970 in all), 60 errors",
    ]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("huge")
    trace = write_jsonl(base / "huge.jsonl", huge_run(25, 800))
    with Store(base / "s.duckdb") as store:
        store.ingest([trace])
    return write_dashboard(base / "out" / "fleet-health.html", db=base / "s.duckdb")


def test_the_huge_run_is_embedded_light(page: Path) -> None:
    text = page.read_text()
    assert "tk-lazy" in text and "No timeline: 20,025 invocations" in text
    assert len(text) < 8_000_000  # plotly.js is most of it


@pytest.mark.browser
def test_browser_opens_a_huge_run_and_expands_one_branch(page: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )  # fmt: skip
        try:
            view = browser.new_page()
            view.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            view.goto(page.as_uri())
            run = view.locator("details.tk-run").first
            run.locator("summary").click()
            tree = run.locator(".tk-lazy")
            first = tree.locator("li").first
            first.wait_for()
            before = tree.locator("li").count()
            head = first.locator(".tk-row").first.inner_text()
            assert "fan_out → batch" in head and "x25" in head
            sql = tree.locator("li", has_text="x799").first
            assert "(19975 in all)" in sql.inner_text() and "errors" in sql.inner_text()
            first.locator(".tk-row").first.click()  # fold the branch away: its lines leave the DOM
            collapsed = tree.locator("li").count()
            first.locator(".tk-row").first.click()  # and open it again
            reopened = tree.locator("li").count()
            hostile = tree.get_by_text(HOSTILE, exact=False).count()
            total = view.evaluate("document.querySelectorAll('li').length")
        finally:
            browser.close()
    assert errors == [] and dialogs == []
    assert collapsed == 1 and reopened == before == 4
    assert hostile == 1  # shown as text, never run
    assert total < 500  # 20,025 invocations, a handful of lines in the DOM


def test_a_run_names_where_its_failure_began(tmp_path: Path) -> None:
    """The run page's header and tree name the origin's code and agent beside a wrapped failure."""
    from tracekit.dashboards.runs import embedded_runs

    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(Path(__file__).parent.parent / "sample_traces" / "child_failure.jsonl")
        [run_id] = [r for (r,) in store.con.execute("SELECT run_id FROM runs").fetchall()]
        section, _ = embedded_runs(store, [run_id])
    assert ">failed:child</b> · " in section
    assert '<span class="why">REFUND_API_TIMEOUT in refunds</span>' in section
    assert "The 1 run this page lists" in section


def test_a_run_degraded_by_a_failed_step_names_the_step_on_its_pages(tmp_path: Path) -> None:
    from _fleet_helpers import C, err, run_events, write

    from tracekit.dashboards.live import run_page
    from tracekit.dashboards.runs import embedded_runs

    refunds = C("refunds", tools=[(HOSTILE, err("TIMEOUT"))])
    trace = write(
        tmp_path / "t.jsonl", run_events("r1", "desk", [C("billing", [refunds])], end={"ok": True})
    )
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(trace)
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        section, _ = embedded_runs(store, ["r1"])
        page = run_page(store, "r1")
    escaped = "&lt;img src=x onerror=alert(1)&gt;"
    assert f'<span class="why">TIMEOUT in refunds, step {escaped}</span>' in section
    assert ">degraded</b>" in section
    assert (
        f"began in step <code>{escaped}</code> of agent <code>refunds</code> (TIMEOUT): timeout happened"
        in page
    )
    assert HOSTILE not in section and HOSTILE not in page
