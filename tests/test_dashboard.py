"""The fleet dashboard: one self-contained page, names escaped, and a real browser draws it."""

from __future__ import annotations

import math
import os
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from _fleet_helpers import ANSI, HOSTILE, MARKUP, T0, all_cases, hostile_run, write

from tracekit.dashboards.graph import circle_edges, delegation_graph
from tracekit.dashboards.page import build_dashboard, write_dashboard
from tracekit.simulation.simulator import simulate
from tracekit.store import Store

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("dash")
    simulate(base / "fleet.jsonl", runs=400, seed=8)
    hand = write(base / "hand.jsonl", all_cases() + hostile_run("evil", t0=T0))
    with Store(base / "s.duckdb") as store:
        store.ingest([base / "fleet.jsonl", hand])
        # a loop that went round the hostile circle (the loops table: issue 29's cost)
        circle = f"{ANSI} -> {HOSTILE} -> {ANSI}"
        store.con.execute(
            "INSERT INTO loops VALUES ('evil', ?, 2, 'silent', NULL, ?, 5, 4, 900, 90, 120.0)",
            [circle, HOSTILE],
        )
    return write_dashboard(base / "out" / "fleet-health.html", db=base / "s.duckdb")


def test_page_is_self_contained(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"<script[^>]+src=", text)  # plotly.js is inline: it opens offline
    assert text.count("Plotly.newPlot") == 5  # four figures, and the runs' timelines on demand
    assert "Recursion circles" in text and "Degraded runs" in text and "Worst runs" in text


def test_hostile_names_are_text(page: Path) -> None:
    text = page.read_text()
    assert HOSTILE not in text and "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "\x1b" not in text.split("<script", 1)[0]  # the ANSI name is escaped before any script
    assert MARKUP.replace("/", "\\u002f") in text  # plain text (plotly's JSON writes "/" as \u002f)
    assert "\x1b" not in text  # the ANSI name shows its escape as text


def test_graph_highlights_the_circle_edges() -> None:
    import pandas as pd

    edges = pd.DataFrame(
        {"caller": ["desk", "orders", "billing", "desk"], "callee": ["orders", "billing", "orders", "faq"],
         "calls": [10, 10, 3, 5], "failed": [3, 3, 3, 0], "refused": [0, 0, 3, 0]}
    )  # fmt: skip
    assert circle_edges(["billing -> orders -> billing"]) == {
        ("billing", "orders"),
        ("orders", "billing"),
    }
    fig = delegation_graph(edges, ["billing -> orders -> billing"])
    purple = [t for t in fig.data if t.mode == "lines" and t.line.color == "#8250df"]
    grey = [t for t in fig.data if t.mode == "lines" and t.line.color != "#8250df"]
    assert len(purple) == 1 and sum(x is None for x in purple[0].x) == 2  # two circle edges
    assert sum(x is None for t in grey for x in t.x) == 2  # desk->orders, desk->faq


def test_build_dashboard_of_an_empty_store(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.duckdb") as store:
        text = build_dashboard(store)
    assert "No run in this window" in text and "holds no run yet" in text


def _rgb(color: str) -> tuple[int, ...]:
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


def test_code_and_agent_palette_never_wears_a_reserved_colour() -> None:
    from tracekit._util.theme import (
        CODE_COLORS,
        OUTCOME_COLORS,
        RECURSION_COLOR,
        RESERVED_COLORS,
        STATUS_COLORS,
    )

    reserved = {RECURSION_COLOR, *OUTCOME_COLORS.values(), *STATUS_COLORS.values()}
    assert reserved <= RESERVED_COLORS
    assert not {c.lower() for c in CODE_COLORS} & {c.lower() for c in RESERVED_COLORS}
    assert len(set(CODE_COLORS)) == len(CODE_COLORS) >= 8
    # not even a near miss: every code colour is far (in RGB) from every reserved one
    near = min(math.dist(_rgb(c), _rgb(r)) for c in CODE_COLORS for r in RESERVED_COLORS)
    assert near > 60, near


def test_failure_bars_use_the_code_palette_only() -> None:
    import pandas as pd

    from tracekit._util.theme import CODE_COLORS, RESERVED_COLORS
    from tracekit.dashboards.fleet_figures import failure_rate_figure

    codes = ["RATE_LIMITED", "SCHEMA_VIOLATION", *(f"CODE_{n}" for n in range(12))]
    frame = pd.DataFrame(
        {"outcome": "failed:child", "origin_agent": "billing", "origin_code": codes,
         "runs": range(len(codes), 0, -1), "rate": 0.01}
    )  # fmt: skip
    colors = [bar.marker.color for bar in failure_rate_figure(frame).data]
    assert set(colors) <= set(CODE_COLORS) and not set(colors) & RESERVED_COLORS


def test_an_empty_window_says_where_the_data_is(page: Path) -> None:
    with Store(page.parent.parent / "s.duckdb", read_only=True) as store:
        first, last = store.con.execute("SELECT min(start_at), max(start_at) FROM runs").fetchone()
        after = last + timedelta(days=1)  # a window that starts after every run
        text = build_dashboard(store, since=f"{after:%Y-%m-%dT%H:%M:%S}")
    assert "No run in this window" in text
    assert f"{first:%Y-%m-%d %H:%M}" in text and f"{last:%Y-%m-%d %H:%M}" in text
    assert "Plotly.newPlot(" not in text.split("<script>", 1)[0]  # no empty axes drawn


def test_graph_colours_an_agent_by_the_failures_that_began_in_it() -> None:
    import pandas as pd

    # desk -> billing -> refunds: refunds failed 5 times, billing only wrapped it
    edges = pd.DataFrame(
        {"caller": ["desk", "billing"], "callee": ["billing", "refunds"], "calls": [10, 10],
         "failed": [5, 5], "refused": [0, 0]}
    )  # fmt: skip
    origins = pd.DataFrame(
        {"agent": ["desk", "billing", "refunds"], "calls": [10, 10, 10], "origins": [0, 0, 5]}
    )
    fig = delegation_graph(edges, origins=origins)
    nodes = next(t for t in fig.data if t.uid == "tk-nodes")
    names = next(t for t in fig.data if t.uid == "tk-labels").text
    colour = dict(zip(names, nodes.marker.color, strict=True))
    assert colour["refunds"] == 0.5 and colour["billing"] == 0.0


@pytest.mark.browser
def test_browser_draws_every_plot_without_errors(page: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh profile
            executable_path=CHROMIUM,
            args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            view = browser.new_page()
            view.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            view.goto(page.as_uri())
            view.wait_for_function(
                "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4"
            )
            drawn = view.evaluate(
                """() => [...document.querySelectorAll('.js-plotly-plot')].map(p =>
                    p.querySelectorAll('.main-svg path, .main-svg rect').length)"""
            )
            hostile_cells = view.get_by_text(HOSTILE, exact=False).count()
            loops = view.locator("section", has_text="Loop cost").locator("tbody tr")
            loop_rows = [loops.nth(i).inner_text() for i in range(loops.count())]
            view.screenshot(path=str(tmp_path / "fleet-health.png"), full_page=True)
            if os.environ.get("TRACEKIT_SCREENSHOT"):  # `make screenshot`: the README's picture
                view.screenshot(path=os.environ["TRACEKIT_SCREENSHOT"], scale="css")
        finally:
            browser.close()
    assert errors == [] and dialogs == []
    assert len(drawn) == 4 and all(n > 10 for n in drawn), drawn
    assert hostile_cells > 0  # shown as text
    assert any(HOSTILE in row and "silent" in row and "990" in row for row in loop_rows)
    assert (tmp_path / "fleet-health.png").stat().st_size > 50_000


@pytest.mark.browser
def test_browser_tables_page_sort_and_link_to_embedded_runs(page: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with Store(page.parent.parent / "s.duckdb", read_only=True) as store:
        degraded = store.con.execute(
            "SELECT count(*) FROM runs WHERE outcome = 'degraded'"
        ).fetchone()[0]
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )  # fmt: skip
        try:
            view = browser.new_page()
            view.goto(page.as_uri())
            view.wait_for_function(
                "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4"
            )
            table = view.locator("section", has_text="Degraded runs").locator(".tk-table")
            rows = table.locator("tbody tr")
            assert int(table.get_attribute("data-total")) == degraded == rows.count() > 20
            shown = lambda: [r for r in rows.all() if r.is_visible()]  # noqa: E731
            first_page = [r.inner_text() for r in shown()]
            assert (
                len(first_page) == 20 and f"of {degraded}" in table.locator(".pager").inner_text()
            )
            table.get_by_role("button", name="next").click()
            assert (
                len(shown()) == min(20, degraded - 20) and shown()[0].inner_text() not in first_page
            )
            table.locator("th", has_text="duration").click()  # ascending
            durations = table.evaluate(
                "t => [...t.querySelectorAll('tbody tr')].map(r => +r.cells[6].dataset.v)"
            )
            assert durations == sorted(durations)
            links = view.evaluate(
                """() => [...document.querySelectorAll('a.run')].map(a => {
                    const el = document.getElementById(a.getAttribute('href').slice(1));
                    return el && el.tagName === 'DETAILS' && !el.open;})"""
            )
            assert links and all(links)
            circles = view.locator("section", has_text="Recursion circles").locator("tbody tr")
            assert circles.count() > 0
            assert (
                circles.locator("a.run").count() == circles.count()
            )  # each circle: an example run
            target = circles.first.locator("a.run").get_attribute("href")
            circles.first.locator("a.run").click()
            run = view.locator(f"details{target}")
            assert run.get_attribute("open") is not None
            run.locator(".timeline .main-svg").first.wait_for()
            assert (
                run.locator(".tracekit-tree").count() == 1 and "AGENT_RECURSION" in run.inner_text()
            )
        finally:
            browser.close()


def test_each_listed_run_says_its_outcome_and_why(page: Path) -> None:
    text = page.read_text()
    summaries = re.findall(r'<details class="tk-run" id="run-\d+"><summary>(.*?)</summary>', text)
    assert len(summaries) > 20 and len(set(summaries)) == len(summaries)
    failed = [s for s in summaries if ">failed:" in s]
    assert failed and all('class="why"' in s or 'class="circle"' in s for s in failed)
    assert any('>degraded</b> · <span class="why">' in s for s in summaries)
    assert text.count('class="tk-spec"') >= len(summaries) - 1  # the calls, drawn on open
    assert (
        "Plotly.newPlot(box" in text and text.count("tracekit-tree") < 5
    )  # no tree built up front
