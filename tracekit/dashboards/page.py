"""The fleet-health dashboard: one self-contained HTML file (plotly.js inline, opens offline).

Built from the same queries as ``tracekit fleet`` (:func:`tracekit.fleet.fleet_report`).
Every name from a trace is HTML-escaped where it enters the page: an agent
called ``<script>alert(1)</script>`` shows as that text and runs nothing.

Example:
    >>> path = write_dashboard("dashboards/fleet-health.html", db="fleet.duckdb")
    >>> print(path)
    dashboards/fleet-health.html
    >>> "<h1>Fleet health</h1>" in path.read_text(encoding="utf-8")
    True
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import plotly.graph_objects as go

from tracekit.dashboards.fleet_figures import failure_rate_figure, latency_figure, outcomes_figure
from tracekit.dashboards.graph import delegation_graph
from tracekit.dashboards.measures import own_time_table, tokens_table
from tracekit.dashboards.runs import embedded_runs
from tracekit.dashboards.sections import (
    CSS,
    cards,
    circles_table,
    degraded_table,
    failures_table,
    loops_section,
    nothing_here,
    version_text,
    window_text,
    worst_table,
)
from tracekit.dashboards.tables import SCRIPT
from tracekit.errors import TracekitError
from tracekit.fleet import FleetReport, fleet_report, outcomes_over_time, worst_runs
from tracekit.store import circle_examples, origin_failures, store_span

__all__ = ["build_dashboard", "fleet_figures", "save_page", "write_dashboard"]

_CONFIG: Final = {"displaylogo": False, "responsive": True}


def _figure(fig: go.Figure, first: bool) -> str:
    return str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=bool(first),
            config=_CONFIG,
            default_width="100%",
        )
    )


def build_dashboard(
    store: Any, *, since: str | None = None, service: str | None = None, agent: str | None = None
) -> str:
    """The dashboard of a store as one HTML document (a string).

    Args:
        store: a :class:`tracekit.store.Store` (only read: every ingest classified its runs).
        since, service, agent: the filters of ``tracekit fleet``.
    """
    report = fleet_report(store, since=since, service=service, agent=agent)
    body = _body(store, report) if report.runs else nothing_here(store_span(store))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fleet health · tracekit</title><style>{CSS}</style></head>
<body>
<header><h1>Fleet health</h1><p>{window_text(report)} · generated {generated}</p></header>
<main>
{body}
</main>
<footer>tracekit {version_text()}</footer>
<script>{SCRIPT}</script>
</body></html>
"""


def _figures(store: Any, report: FleetReport) -> list[str]:
    return [_figure(fig, i == 0) for i, fig in enumerate(fleet_figures(store, report))]


def fleet_figures(store: Any, report: FleetReport) -> list[go.Figure]:
    """The page's four figures: outcomes over time, delegation graph, failure rates, latency."""
    origins = origin_failures(store, report.filter)
    return [
        outcomes_figure(outcomes_over_time(store, report.filter)),
        delegation_graph(
            report.edges,
            report.circles["circle"],
            origins=origins,
            title="Delegation graph (recursion circles in purple)",
        ),
        failure_rate_figure(report.failures),
        latency_figure(report.latency),
    ]


def _body(store: Any, report: FleetReport) -> str:
    """Cards, figures, tables (every row) and the runs they list, embedded."""
    plots = _figures(store, report)
    examples = circle_examples(store, report.filter)
    worst = worst_runs(store, report.filter)
    degraded = report.degraded  # every degraded run of the window
    listed = [*worst["run_id"], *examples.values(), *degraded["run_id"]]
    runs, links = embedded_runs(store, listed)
    return f"""{cards(report)}
<section>{plots[0]}</section>
<section><h2>Recursion circles</h2>
<p class="note">A circle of agents is wrong by construction: the flow will take that route again. Act on each one, even if it happened once.</p>
{circles_table(report, examples, links)}
<div class="graph">{plots[1]}</div></section>
{loops_section(report)}
<div class="grid2"><section>{plots[2]}</section><section>{plots[3]}</section></div>
<div class="grid2"><section><h2>Own time by agent</h2>
<p class="note">Own time: a call's duration less the time its own calls took (overlaps counted once). The slow agent has a long own time; one that only waits has a long total.</p>
{own_time_table(report.latency)}</section>
<section><h2>Tokens by agent</h2><p class="note">Each agent's own model tokens: totals, and the median per call.</p>
{tokens_table(report.tokens)}</section></div>
<section style="margin-top:18px"><h2>Failures by origin</h2>
<p class="note">Where each failed run's failure began: the deepest invocation, however many levels wrapped it as AGENT_FAILED.</p>
{failures_table(report)}</section>
<section><h2>Degraded runs</h2>
<p class="note">These runs ended ok, but a delegation inside failed and a caller handled it, or a tool or model call failed and its agent went on: they only looked fine. Newest first.</p>
{degraded_table(degraded, links)}</section>
<section><h2>Worst runs</h2><p class="note">Circles first, then the most failed calls. A run id opens its tree and timeline below.</p>
{worst_table(worst, links)}</section>
<section id="runs"><h2>Runs</h2>{runs}</section>"""


def write_dashboard(
    out: str | os.PathLike[str] = "dashboards/fleet-health.html",
    *,
    db: str | os.PathLike[str] | None = None,
    since: str | None = None,
    service: str | None = None,
    agent: str | None = None,
    wait: float = 0.0,
) -> Path:
    """Open the store (waiting up to ``wait`` seconds for a writer), build the
    dashboard and write it to ``out`` (folders made as needed)."""
    from tracekit.fleet import open_for_report

    with open_for_report(db, wait=wait) as store:
        page = build_dashboard(store, since=since, service=service, agent=agent)
    return save_page(out, page)


def save_page(out: str | os.PathLike[str], page: str) -> Path:
    """Write a page to ``out`` (folders made as needed).

    Raises:
        TracekitError: it cannot be written.
    """
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise TracekitError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return path
