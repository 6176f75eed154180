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

import html
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pandas as pd
import plotly.graph_objects as go

from tracekit._util.theme import OUTCOME_COLORS
from tracekit.dashboards.fleet_figures import (
    failure_rate_figure,
    label,
    latency_figure,
    outcomes_figure,
)
from tracekit.dashboards.graph import delegation_graph
from tracekit.dashboards.measures import own_time_table, sessions_card, tokens_table
from tracekit.dashboards.queries import (
    StoreSpan,
    circle_examples,
    origin_failures,
    store_span,
)
from tracekit.dashboards.runs import embedded_runs
from tracekit.dashboards.tables import SCRIPT, cell_text, table
from tracekit.errors import TracekitError
from tracekit.fleet import FleetReport, fleet_report, outcomes_over_time, worst_runs

__all__ = ["build_dashboard", "fleet_figures", "save_page", "write_dashboard"]

_CSS: Final = """
*{box-sizing:border-box}
body{margin:0;background:#f6f8fa;color:#1f2328;
  font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:18px 32px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#59636e}
main{max-width:1280px;margin:0 auto;padding:20px 32px 48px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(128px,1fr));gap:12px;margin-bottom:18px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:12px 14px;border-top:4px solid var(--c)}
.card .n{font-size:24px;font-weight:600}
.card .l{color:#59636e;font-size:11px;text-transform:uppercase;letter-spacing:.02em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.card .s{color:#59636e;font-size:12px}
section{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:16px 18px;margin-bottom:18px}
section h2{margin:0 0 4px;font-size:17px}
section p.note{margin:0 0 12px;color:#59636e}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:18px}
@media (max-width:1000px){.grid2{grid-template-columns:1fr}}
.grid2 section{margin-bottom:0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{color:#59636e;font-weight:600;background:#f6f8fa}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:11px;font-weight:700;
  color:#fff;background:#8250df}
.badge.new{background:#cf222e}
.circle{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#8250df;font-weight:600}
details{border:1px solid #d0d7de;border-radius:6px;margin:8px 0;background:#fff}
summary{cursor:pointer;padding:8px 12px;font-weight:600}
pre{margin:0;padding:10px 14px;background:#f6f8fa;border-top:1px solid #d0d7de;overflow:auto;font-size:12px}
.empty{color:#59636e;font-style:italic}
.tk-table .count{margin:0 0 6px;color:#59636e;font-size:12px}
.tk-table .pager{margin:6px 0 0;color:#59636e;font-size:12px}
.tk-table .pager button{font:inherit;margin:0 4px;padding:1px 8px;cursor:pointer}
.tk-table th{cursor:pointer;user-select:none}
.tk-table th[data-dir=asc]::after{content:" \\25B2"}
.tk-table th[data-dir=desc]::after{content:" \\25BC"}
a.run{color:#0969da;text-decoration:none}
a.run:hover{text-decoration:underline}
.run-body{padding:8px 14px;border-top:1px solid #d0d7de}
.graph{overflow-x:auto}
.nothing p{margin:6px 0 0}
footer{color:#59636e;text-align:center;font-size:12px;padding:12px}
"""
_CONFIG: Final = {"displaylogo": False, "responsive": True}


_e = cell_text


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _figure(fig: go.Figure, first: bool) -> str:
    return str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=bool(first),
            config=_CONFIG,
            default_width="100%",
        )
    )


def _cards(report: FleetReport) -> str:
    shares = report.outcomes.set_index("outcome")
    cards = [
        f'<div class="card" style="--c:#1f2328"><div class="l">runs</div><div class="n">{report.runs:,}</div></div>'
    ]
    for outcome in shares.index:
        runs, share = int(shares.loc[outcome, "runs"]), float(shares.loc[outcome, "share"])
        extra = ""
        if outcome == "incomplete":
            extra = f'<div class="s">{report.incomplete["crashed"]:,} crashed, {report.incomplete["running"]:,} running</div>'
        elif outcome == "failed:recursion":
            extra = f'<div class="s">{len(report.circles):,} circle{"s" * (len(report.circles) != 1)}</div>'
        cards.append(
            f'<div class="card" style="--c:{OUTCOME_COLORS[outcome]}"><div class="l">{_e(outcome)}</div>'
            f'<div class="n">{_pct(share)}</div><div class="s">{runs:,} runs</div>{extra}</div>'
        )
    cards.append(sessions_card(report.sessions))
    return f'<div class="cards">{"".join(cards)}</div>'


def _circles(report: FleetReport, examples: dict[str, str], links: dict[str, str]) -> str:
    frame = report.circles.copy()
    frame["act"] = frame.get("new", pd.Series(pd.NA, index=frame.index))
    frame["example"] = [examples.get(str(c)) for c in frame["circle"]]
    return table(
        frame,
        [("act", "", "act"), ("circle", "circle", "circle"), ("example", "example run", "run"),
         ("runs", "runs", "num"), ("failed", "failed", "num"), ("services", "services", "text"),
         ("first_seen", "first seen", "text"), ("last_seen", "last seen", "text")],
        "No recursion circle in this window.",
        links=links, name="circles",
    )  # fmt: skip


def _worst(worst: pd.DataFrame, links: dict[str, str]) -> str:
    frame = worst.copy()
    frame["why"] = [
        c if isinstance(c, str) else f"{a} {k}"
        for c, a, k in zip(frame["circle"], frame["origin_agent"], frame["origin_code"], strict=True)
    ] if not frame.empty else []  # fmt: skip
    return table(
        frame,
        [("run_id", "run", "run"), ("outcome", "outcome", "text"), ("service", "service", "text"),
         ("why", "why", "text"), ("failed_invocations", "failed calls", "num"),
         ("duration_ms", "duration", "ms")],
        "No failed run in this window.",
        links=links, name="worst runs",
    )  # fmt: skip


def _window(report: FleetReport) -> str:
    flt = report.filter
    what = (
        f"runs started {flt.start:%Y-%m-%d %H:%M} to {flt.end:%Y-%m-%d %H:%M} UTC"
        if flt.start is not None and flt.end is not None
        else "every run in the store"
    )
    what = html.escape(what)
    if flt.service:
        what += f", service {label(flt.service)}"
    if flt.agent:
        what += f", agent {label(flt.agent)}"
    return what


def build_dashboard(
    store: Any, *, since: str | None = None, service: str | None = None, agent: str | None = None
) -> str:
    """The dashboard of a store as one HTML document (a string).

    Args:
        store: a :class:`tracekit.store.Store` (only read: every ingest classified its runs).
        since, service, agent: the filters of ``tracekit fleet``.
    """
    report = fleet_report(store, since=since, service=service, agent=agent)
    body = _body(store, report) if report.runs else _nothing_here(store_span(store))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fleet health · tracekit</title><style>{_CSS}</style></head>
<body>
<header><h1>Fleet health</h1><p>{_window(report)} · generated {generated}</p></header>
<main>
{body}
</main>
<footer>tracekit {html.escape(_version())}</footer>
<script>{SCRIPT}</script>
</body></html>
"""


def _nothing_here(span: StoreSpan) -> str:
    """An empty window: where the data is, instead of empty axes."""
    if not span.runs or span.first is None or span.last is None:
        where = "The store holds no run yet: <code>tracekit ingest FILE</code> adds some."
    else:
        where = (
            f"The store holds {span.runs:,} run{'s' * (span.runs != 1)}: the first started"
            f" {span.first:%Y-%m-%d %H:%M} UTC, the last {span.last:%Y-%m-%d %H:%M} UTC."
            " Widen <code>--since</code> (or drop it, or the service and agent filters) to see them."
        )
    return f'<section class="nothing"><h2>No run in this window</h2><p>{where}</p></section>'


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
    return f"""{_cards(report)}
<section>{plots[0]}</section>
<section><h2>Recursion circles</h2>
<p class="note">A circle of agents is wrong by construction: the flow will take that route again. Act on each one, even if it happened once.</p>
{_circles(report, examples, links)}
<div class="graph">{plots[1]}</div></section>
<div class="grid2"><section>{plots[2]}</section><section>{plots[3]}</section></div>
<div class="grid2"><section><h2>Own time by agent</h2>
<p class="note">Own time: a call's duration less the time its own calls took (overlaps counted once). The slow agent has a long own time; one that only waits has a long total.</p>
{own_time_table(report.latency)}</section>
<section><h2>Tokens by agent</h2><p class="note">Each agent's own model tokens: totals, and the median per call.</p>
{tokens_table(report.tokens)}</section></div>
<section style="margin-top:18px"><h2>Failures by origin</h2>
<p class="note">Where each failed run's failure began: the deepest invocation, however many levels wrapped it as AGENT_FAILED.</p>
{_failures(report)}</section>
<section><h2>Degraded runs</h2>
<p class="note">These runs ended ok, but a delegation inside failed and a caller handled it: they only looked fine. Newest first.</p>
{_degraded(degraded, links)}</section>
<section><h2>Worst runs</h2><p class="note">Circles first, then the most failed calls. A run id opens its tree and timeline below.</p>
{_worst(worst, links)}</section>
<section id="runs"><h2>Runs</h2>{runs}</section>"""


def _failures(report: FleetReport) -> str:
    return table(
        report.failures,
        [("origin_agent", "origin agent", "text"), ("origin_code", "code", "text"),
         ("outcome", "outcome", "text"), ("runs", "runs", "num"), ("share", "share of runs", "pct"),
         ("rate", "per call", "pct")],
        "No failed run in this window.",
        name="origins",
    )  # fmt: skip


def _degraded(degraded: pd.DataFrame, links: dict[str, str]) -> str:
    return table(
        degraded,
        [("run_id", "run", "run"), ("start_at", "started", "text"), ("service", "service", "text"),
         ("agent", "entry agent", "text"), ("origin_agent", "failed agent", "text"),
         ("origin_code", "code", "text"), ("duration_ms", "duration", "ms")],
        "No degraded run in this window.",
        links=links, name="degraded runs",
    )  # fmt: skip


def _version() -> str:
    from tracekit._version import __version__

    return __version__


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
