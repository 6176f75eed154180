"""The fleet dashboard: one self-contained page, names escaped, and a real browser draws it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from _fleet_helpers import HOSTILE, MARKUP, T0, all_cases, hostile_run, write

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
    return write_dashboard(base / "out" / "fleet-health.html", db=base / "s.duckdb")


def test_page_is_self_contained(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"<script[^>]+src=", text)  # plotly.js is inline: it opens offline
    assert text.count("Plotly.newPlot") == 4
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
    assert "No recursion circle" in text and "No degraded run" in text


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
            view.screenshot(path=str(tmp_path / "fleet-health.png"), full_page=True)
            if os.environ.get("TRACEKIT_SCREENSHOT"):  # `make screenshot`: the README's picture
                view.screenshot(path=os.environ["TRACEKIT_SCREENSHOT"], scale="css")
        finally:
            browser.close()
    assert errors == [] and dialogs == []
    assert len(drawn) == 4 and all(n > 10 for n in drawn), drawn
    assert hostile_cells > 0  # shown as text
    assert (tmp_path / "fleet-health.png").stat().st_size > 50_000
