"""The sections both fleet pages share: the style, the cards, the window line and the tables.

The static dashboard (:mod:`tracekit.dashboards.page`) and the live page of
``tracekit serve`` (:mod:`tracekit.dashboards.live`) show the same cards and
tables, built here from a :class:`~tracekit.fleet.FleetReport`. Every name
from a trace is HTML-escaped where it enters the page.

Example:
    >>> from tracekit.fleet import fleet_report
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     report = fleet_report(store)
    >>> '<div class="cards">' in cards(report), "runs started" in window_text(report) or True
    (True, True)
    >>> script_json('{"a": "</script>"}')
    '{"a": "\\\\u003c/script\\\\u003e"}'
"""

from __future__ import annotations

import html
from typing import Final

import pandas as pd

from tracekit._util.theme import OUTCOME_COLORS
from tracekit.dashboards.fleet_figures import label
from tracekit.dashboards.measures import sessions_line
from tracekit.dashboards.tables import cell_text, table
from tracekit.fleet import FleetReport
from tracekit.store import StoreSpan

__all__ = [
    "CSS",
    "cards",
    "circles_table",
    "degraded_table",
    "failures_table",
    "loops_section",
    "loops_table",
    "nothing_here",
    "script_json",
    "version_text",
    "window_text",
    "worst_table",
]

#: The pages' style sheet.
CSS: Final = """
*{box-sizing:border-box}
body{margin:0;background:#f6f8fa;color:#1f2328;
  font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:18px 32px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#59636e}
main{max-width:1280px;margin:0 auto;padding:20px 32px 48px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:12px;margin-bottom:18px}
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
summary .where{color:#59636e;font-weight:400}
.tk-calls-tree{list-style:none;margin:0 0 8px;padding:0;
  font:13px/1.55 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.tk-calls-tree .tk-status{color:#fff;border-radius:3px;padding:0 .35em}
.nothing p{margin:6px 0 0}
footer{color:#59636e;text-align:center;font-size:12px;padding:12px}
"""


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def cards(report: FleetReport, *, waiting: int = 0) -> str:
    """One card for the runs (with the window's sessions), one for each outcome.

    ``waiting``: spans a live collector holds for traces whose root has not
    arrived; they are counted on the incomplete card (made for them if needed).
    """
    shares = report.outcomes.set_index("outcome")
    if waiting and "incomplete" not in shares.index:
        shares.loc["incomplete", ["runs", "share"]] = [0, 0.0]
    out = [
        f'<div class="card" style="--c:#1f2328"><div class="l">runs</div>'
        f'<div class="n">{report.runs:,}</div>{sessions_line(report.sessions)}</div>'
    ]
    for outcome in shares.index:
        runs, share = int(shares.loc[outcome, "runs"]), float(shares.loc[outcome, "share"])
        extra = ""
        if outcome == "incomplete":
            extra = f'<div class="s">{report.incomplete.get("crashed", 0):,} crashed, {report.incomplete.get("running", 0):,} running</div>'
            extra += _waiting_line(waiting)
        elif outcome == "failed:recursion":
            extra = f'<div class="s">{len(report.circles):,} circle{"s" * (len(report.circles) != 1)}</div>'
        out.append(
            f'<div class="card" style="--c:{OUTCOME_COLORS[outcome]}"><div class="l">{cell_text(outcome)}</div>'
            f'<div class="n">{_pct(share)}</div><div class="s">{runs:,} run{"s" * (runs != 1)}</div>{extra}</div>'
        )
    return f'<div class="cards">{"".join(out)}</div>'


def _waiting_line(waiting: int) -> str:
    if not waiting:
        return ""
    return f'<div class="s">+ {_waiting_spans(waiting)} for their trace\'s root</div>'


def _waiting_spans(waiting: int) -> str:
    return f"{waiting:,} span{' is' if waiting == 1 else 's are'} waiting"


def circles_table(report: FleetReport, examples: dict[str, str], links: dict[str, str]) -> str:
    """The window's recursion circles, each with an example run."""
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


def loops_table(report: FleetReport) -> str:
    """The cost of each circle's loops, split by how they stopped: costliest circle first."""
    return table(
        report.loops,
        [("circle", "circle", "circle"), ("stopped", "stopped", "text"), ("runs", "runs", "num"),
         ("revisits", "revisits", "num"), ("model_calls", "model calls", "num"),
         ("input_tokens", "input tokens", "num"), ("output_tokens", "output tokens", "num"),
         ("duration_ms", "time inside", "ms"), ("tokens_per_run", "tokens / run", "num"),
         ("model_calls_per_run", "model calls / run", "num"), ("ms_per_run", "time / run", "ms"),
         ("limit_codes", "limit", "text")],
        "No agents went round a circle in this window.",
        name="circles and stops",
    )  # fmt: skip


def loops_section(report: FleetReport) -> str:
    """The loop cost section both pages show (with its totals by how the loops stopped)."""
    return f"""<section><h2>Loop cost</h2>
<p class="note">What the agents spent going round each circle: tokens, model calls and time inside it, in total and per run, split by how the loop stopped. <b>limit</b>: a framework's limit raised; <b>silent</b>: cut off at a limit without an error; <b>refused</b>: refused on the call path; <b>finished</b>: ended ok after its revisits. The silent and finished loops look healthy elsewhere and burn as much.{_loop_totals(report)}</p>
{loops_table(report)}</section>"""


_STOPS: Final = ("limit", "silent", "refused", "finished")


def _loop_totals(report: FleetReport) -> str:
    frame = report.loops
    if frame.empty:
        return ""
    tokens = frame["input_tokens"].fillna(0) + frame["output_tokens"].fillna(0)
    spent = tokens.groupby(frame["stopped"]).sum().to_dict()
    order = [k for k in _STOPS if k in spent] + sorted(set(spent) - set(_STOPS))
    parts = [f"{cell_text(k)} {int(spent[k]):,}" for k in order if spent[k]]
    return f" Tokens inside circles: {int(tokens.sum()):,}" + (
        f" ({', '.join(parts)})." if parts else "."
    )


def worst_table(worst: pd.DataFrame, links: dict[str, str]) -> str:
    """The worst runs: circles first, then the most failed calls, with why each failed."""
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


def failures_table(report: FleetReport) -> str:
    """Failed runs by the agent and code their failure began with."""
    return table(
        report.failures,
        [("origin_agent", "origin agent", "text"), ("origin_code", "code", "text"),
         ("outcome", "outcome", "text"), ("runs", "runs", "num"), ("share", "share of runs", "pct"),
         ("rate", "per call", "pct")],
        "No failed run in this window.",
        name="origins",
    )  # fmt: skip


def degraded_table(degraded: pd.DataFrame, links: dict[str, str]) -> str:
    """Runs that ended ok with a failed delegation or step inside, newest first."""
    return table(
        degraded,
        [("run_id", "run", "run"), ("start_at", "started", "text"), ("service", "service", "text"),
         ("agent", "entry agent", "text"), ("origin_agent", "failed agent", "text"),
         ("origin_code", "code", "text"), ("duration_ms", "duration", "ms")],
        "No degraded run in this window.",
        links=links, name="degraded runs",
    )  # fmt: skip


def window_text(report: FleetReport) -> str:
    """The report's window and filters in words (HTML-escaped)."""
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


def nothing_here(span: StoreSpan, *, waiting: int = 0) -> str:
    """An empty window: where the data is, instead of empty axes (and what is on its way)."""
    if not span.runs or span.first is None or span.last is None:
        where = "The store holds no run yet: <code>tracekit ingest FILE</code> adds some."
    else:
        where = (
            f"The store holds {span.runs:,} run{'s' * (span.runs != 1)}: the first started"
            f" {span.first:%Y-%m-%d %H:%M} UTC, the last {span.last:%Y-%m-%d %H:%M} UTC."
            " Widen <code>--since</code> (or drop it, or the service and agent filters) to see them."
        )
    if waiting:
        where += f" {_waiting_spans(waiting)} for their trace's root to arrive."
    return f'<section class="nothing"><h2>No run in this window</h2><p>{where}</p></section>'


def script_json(text: str) -> str:
    """JSON that cannot close its ``<script>`` or open a comment: no raw ``<``, ``>``, ``&``."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def version_text() -> str:
    """tracekit's version, escaped for a page's footer."""
    from tracekit._version import __version__

    return html.escape(__version__)
