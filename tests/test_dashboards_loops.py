"""The loop cost section of the static dashboard and the live page: sums shown, names escaped."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from _loops_helpers import HOSTILE_AGENT, HOSTILE_CIRCLE, loop_store

from tracekit.dashboards.live import live_content
from tracekit.dashboards.page import build_dashboard
from tracekit.store import Store


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return loop_store(tmp_path_factory.mktemp("dash-loops"))


def _section(page: str) -> str:
    start = page.index("<h2>Loop cost</h2>")
    return page[start : page.index("</section>", start)]


def _rows(section: str) -> list[list[str]]:
    """Each body row's cells as text (tags dropped, entities read back)."""
    body = section[section.index("<tbody>") :]
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]  # fmt: skip


@pytest.mark.parametrize("which", ["dashboard", "live"])
def test_the_section_shows_each_circle_and_stop(db: Path, which: str) -> None:
    with Store(db, read_only=True) as store:
        page = (
            build_dashboard(store) if which == "dashboard" else live_content(store, version="1")["html"]
        )  # fmt: skip
    section = _rows(_section(page))
    shown = {(r[0], r[1]) for r in section}
    assert ("billing -> refunds -> billing", "silent") in shown
    assert ("planner -> critic -> planner", "limit") in shown
    silent = next(r for r in section if r[1] == "silent")
    assert silent[2:7] == ["2", "8", "16", "8,000", "800"]  # runs, revisits, calls, in, out
    assert (
        "Tokens inside circles: 14,630 (limit 1,320, silent 8,800, refused 110, finished 4,400)"
        in page
    )


def test_hostile_names_are_text_not_markup(db: Path) -> None:
    with Store(db, read_only=True) as store:
        section = _section(build_dashboard(store))
    assert HOSTILE_AGENT not in section  # never raw: the quote is an entity, the line feed \x0a
    shown = html.escape(HOSTILE_CIRCLE.replace("\n", "\\x0a"))
    assert f'<span class="circle">{shown}</span>' in section
    refused = next(r for r in _rows(section) if r[1] == "refused")
    assert refused[0] == HOSTILE_CIRCLE.replace("\n", "\\x0a")


def test_a_run_page_lists_its_own_loops(db: Path) -> None:
    from tracekit.dashboards.live import run_page

    with Store(db, read_only=True) as store:
        looped = run_page(store, "r-ok3")
        plain = run_page(store, "r-crash")
    rows = _rows(_section(looped.replace("<h2>Loops</h2>", "<h2>Loop cost</h2>")))
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("planner -> critic -> planner", "limit", "6"),  # 1,320 tokens: first
        ("billing -> refunds -> billing", "finished", "3"),  # no usage reported
    ]
    assert rows[0][4:6] == ["1,200", "120"] and rows[1][4] == "-"
    assert "<h2>Loops</h2>" not in plain
