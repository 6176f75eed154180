"""The delegation graph's layout: Graphviz places it, every agent and name inside the page at
1280 and 1920 px, each name in its own box, measured by a real browser on the demo fleet and on
a 200-agent fleet (and the demo's cards, one row)."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest
from test_dashboard import CHROMIUM, FLAGS

from tracekit.dashboards.graph import GRAPH_WIDTH, delegation_graph
from tracekit.dashboards.graph_layout import Box, layout
from tracekit.dashboards.page import write_dashboard
from tracekit.dashboards.sections import CSS
from tracekit.simulation.simulator import simulate
from tracekit.store import Store


def big_fleet(agents: int = 200, seed: int = 4) -> pd.DataFrame:
    """Services of 4 to 12 agents (a tree from the entry, a circle in some), and one router
    that calls 30 agents: ``agents`` agents in all, edges as the fleet report gives them."""
    rng = random.Random(seed)
    rows, made, service = [], 0, 0
    fan = [f"router-skill-{n:02d}" for n in range(30)]
    rows += [("front-router", name, rng.randint(1, 900), rng.randint(0, 40)) for name in fan]
    made += 31
    while made < agents:
        size = min(rng.randint(4, 12), agents - made)
        names = [f"svc{service:02d}-{rng.choice(['billing', 'sql', 'planner', 'search'])}-{n}"
                 for n in range(size)]  # fmt: skip
        for n in range(1, size):
            rows.append(
                (names[rng.randrange(n)], names[n], rng.randint(1, 500), rng.randint(0, 30))
            )
        if size > 2 and service % 3 == 0:
            rows.append((names[-1], names[0], 3, 3))  # a circle back to the entry
        made, service = made + size, service + 1
    frame = pd.DataFrame(rows, columns=["caller", "callee", "calls", "failed"])
    frame["failed"] = frame[["calls", "failed"]].min(axis=1)
    frame["refused"] = 0
    return frame


def test_the_big_fleet_has_200_agents() -> None:
    edges = big_fleet()
    assert len(set(edges["caller"]) | set(edges["callee"])) == 200


def test_layout_packs_groups_to_the_width_and_boxes_never_meet() -> None:
    edges = big_fleet()
    placed = layout(zip(edges["caller"], edges["callee"], strict=True), width=1000)
    assert len(placed.boxes) == 200 and placed.width <= 1000
    boxes = list(placed.boxes.values())
    for i, a in enumerate(boxes):
        assert a.x - a.w / 2 >= -0.5 and a.x + a.w / 2 <= placed.width + 0.5
        assert a.y - a.h / 2 >= -0.5 and a.y + a.h / 2 <= placed.height + 0.5
        for b in boxes[i + 1 :]:
            apart = abs(a.x - b.x) >= (a.w + b.w) / 2 or abs(a.y - b.y) >= (a.h + b.h) / 2
            assert apart, (a, b)


def _near(box: Box, point: tuple[float, float]) -> bool:
    return abs(point[0] - box.x) <= box.w / 2 + 2 and abs(point[1] - box.y) <= box.h / 2 + 2


def test_every_edge_runs_from_its_caller_to_its_callee() -> None:
    placed = layout([("desk", "billing"), ("billing", "refunds"), ("refunds", "desk")], width=900)
    assert len(placed.edges) == 3
    for (a, b), line in placed.edges.items():
        assert _near(placed.boxes[a], line[0]) and _near(placed.boxes[b], line[-1]), (a, b)


def test_a_plural_for_the_names_left_out() -> None:
    edges = pd.DataFrame({"caller": ["a", "a"], "callee": ["b", "ghost"], "calls": [3, 2],
                          "failed": [0, 2], "refused": [0, 2]})  # fmt: skip
    assert "· 1 name only ever refused not drawn" in delegation_graph(edges).layout.title.text


# Every box (a shape) and name (text) of the graph, measured on screen: inside the window's
# width and the figure, each name touching its own box and no other box or name.
_MEASURE = """() => {
  const plot = [...document.querySelectorAll('.js-plotly-plot')]
    .find(p => p.querySelector('.tracetk-labels'));
  const box = r => ({l: r.left, t: r.top, r: r.right, b: r.bottom});
  const hit = (a, b) => a.l <= b.r && b.l <= a.r && a.t <= b.b && b.t <= a.b;
  const apart = (a, b) => a.l >= b.r - 1 || b.l >= a.r - 1 || a.t >= b.b - 1 || b.t >= a.b - 1;
  const labels = [...plot.querySelectorAll('.tracetk-labels text')]
    .map(t => ({name: t.textContent, ...box(t.getBoundingClientRect())}));
  const boxes = [...plot.querySelectorAll('.shapelayer path')].map(p => box(p.getBoundingClientRect()));
  const figure = box(plot.querySelector('.main-svg').getBoundingClientRect());
  const width = document.documentElement.clientWidth;
  const bad = [];
  const inside = (a, what) => {
    if (a.l < 0 || a.r > width) bad.push(what + ' outside the window');
    if (a.l < figure.l || a.r > figure.r || a.t < figure.t || a.b > figure.b) bad.push(what + ' outside the figure');
  };
  labels.forEach((a, i) => {
    inside(a, a.name);
    inside(boxes[i], a.name + "'s box");
    if (!hit(a, boxes[i])) bad.push(a.name + ' far from its box');
    boxes.forEach((b, j) => { if (j !== i && !apart(a, b)) bad.push(a.name + ' on another box'); });
    labels.slice(i + 1).forEach(b => { if (!apart(a, b)) bad.push(a.name + ' on ' + b.name); });
  });
  return {labels: labels.length, boxes: boxes.length, bad,
          scrolls: document.documentElement.scrollWidth > width};
}"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("graph")
    simulate(base / "fleet.jsonl", runs=400, seed=8)  # the demo's fleet
    with Store(base / "s.duckdb") as store:
        store.ingest([base / "fleet.jsonl"])
    demo = write_dashboard(base / "demo.html", db=base / "s.duckdb")
    fig = delegation_graph(big_fleet(), title="200 agents")
    big = base / "big.html"
    big.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{CSS}</style></head><body>"
        f"<main><section><div class='graph'>{fig.to_html(full_html=False, include_plotlyjs=True)}"
        "</div></section></main></body></html>"
    )
    return {"demo": demo, "big": big}


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 1920])
@pytest.mark.parametrize("fleet", ["demo", "big"])
def test_browser_every_agent_and_name_in_view(
    pages: dict[str, Path], fleet: str, width: int, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=FLAGS,
            viewport={"width": width, "height": 900},
        )  # fmt: skip
        try:
            view = browser.new_page()
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.goto(pages[fleet].as_uri())
            view.wait_for_selector(".tracetk-labels text")
            seen = view.evaluate(_MEASURE)
            tops = view.evaluate("[...document.querySelectorAll('.card')].map(c => c.offsetTop)")
        finally:
            browser.close()
    agents = 200 if fleet == "big" else 15
    assert errors == [] and seen["labels"] == seen["boxes"] >= agents
    assert seen["bad"] == [] and not seen["scrolls"], seen["bad"][:10]
    if fleet == "demo":  # the runs card and the seven outcomes: one row, none left alone
        assert len(tops) == 8 and len(set(tops)) == 1, tops


def test_the_graph_fits_a_section_at_1280_px() -> None:
    # main: 1280 - 2 * 32 padding; section: 2 * 18 padding, 2 * 1 border
    assert GRAPH_WIDTH + 10 + 90 <= 1280 - 64 - 36 - 2


def test_without_graphviz_the_dashboard_says_how_to_get_it(
    pages: dict[str, Path], tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent  # the venv's commands, and no dot
    done = subprocess.run(
        [str(bin_dir / "tracekit"), "dashboard", "--db", str(pages["demo"].parent / "s.duckdb"),
         "--out", str(tmp_path / "page.html")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": str(bin_dir)},
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "needs Graphviz's dot" in done.stderr and "apt-get install graphviz" in done.stderr
    assert not (tmp_path / "page.html").exists()
