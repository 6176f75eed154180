"""The live fleet page that ``tracekit serve`` shows at ``/``, and its run pages.

The page is a shell (filters, an empty body, the script) that asks the server
for its content (:func:`live_content`) and asks again every few seconds; the
answer carries the store's version, and an unchanged store sends back only
that, so an idle page costs one small query. The content is the dashboard's
(the same cards, figures and tables as :func:`~tracekit.dashboards.page.build_dashboard`),
each run id a link to ``/runs/{run_id}`` (:func:`run_page`: its tree, timeline
and root cause). plotly.js comes from the server (:func:`plotly_js`), never a
CDN, so the page works offline. Names from traces are HTML-escaped where they
enter the page, as on the static dashboard.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     content = live_content(store, version="1")
    ...     run_id = store.runs(limit=1)["run_id"][0]
    ...     page = run_page(store, run_id)
    >>> content["version"], len(content["figures"]), "/runs/" in content["html"]
    ('1', 4, True)
    >>> "<h2>Root cause</h2>" in page
    True
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from functools import cache
from typing import Any, Final
from urllib.parse import quote

import pandas as pd

from tracekit.dashboards.page import fleet_figures
from tracekit.dashboards.run_figures import timeline_figure
from tracekit.dashboards.sections import (
    CSS,
    cards,
    circles_table,
    degraded_table,
    failures_table,
    loops_section,
    nothing_here,
    script_json,
    version_text,
    window_text,
    worst_table,
)
from tracekit.dashboards.tables import SCRIPT, cell_text, table
from tracekit.fleet import fleet_report, worst_runs
from tracekit.store import circle_examples, store_span
from tracekit.tree.html import tree_to_html

__all__ = [
    "OUTCOME_FILTERS",
    "TYPING_MS",
    "live_content",
    "live_shell",
    "plotly_js",
    "run_href",
    "run_page",
]

#: The outcomes the page's outcome filter offers (``failed`` is every failed:*).
OUTCOME_FILTERS: Final = (
    "ok",
    "degraded",
    "failed",
    "failed:recursion",
    "failed:child",
    "failed:refused",
    "cancelled",
    "incomplete",
)
_RECENT_RUNS: Final = 200
_MAX_STEPS: Final = 2000

_LIVE_CSS: Final = """
form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end;margin-top:10px}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#59636e}
form.filters input,form.filters select{font:inherit;padding:3px 6px;min-width:9em}
#status{font-size:12px;color:#59636e;margin-left:auto}
#notice{margin:10px 0 0;padding:8px 12px;border:1px solid #d4a72c;border-radius:6px;background:#fff8c5;color:#1f2328}
#notice[hidden]{display:none}
main.stale{opacity:.35;filter:grayscale(1);pointer-events:none;user-select:none}
.tk-fig{min-height:120px}
"""

# plotly.js loads beside the first request (async): the cards and tables show as soon
# as the content arrives, the figures once plotly.js is there.
# The filters' typing is debounced (one request once typing pauses); an error the
# server explains (an unknown service, say) is shown as its sentence and hint beside
# the filters, and the numbers below are greyed: they are not those of the filters.
_LIVE_SCRIPT: Final = """
(function(){
var form=document.getElementById('filters'), box=document.getElementById('content'),
    status=document.getElementById('status'), notice=document.getElementById('notice'),
    version='', typing=null, asked=0, waiting=null;
function query(){
  var q=new URLSearchParams();
  [].forEach.call(form.elements,function(el){if(el.name&&el.value.trim())q.set(el.name,el.value.trim());});
  return q;
}
function plots(data){
  if(!window.Plotly){waiting=data;return;}
  waiting=null;
  [].forEach.call(box.querySelectorAll('.tk-fig'),function(el){
    var fig=data.figures[+el.dataset.fig];
    Plotly.react(el,fig.data,fig.layout,{displaylogo:false,responsive:true});
  });
}
function draw(data){
  box.innerHTML=data.html;
  document.getElementById('window').textContent=data.window;
  if(window.tkSetup)window.tkSetup(box);
  plots(data);
}
document.getElementById('plotlyjs').addEventListener('load',function(){if(waiting)plots(waiting);});
function fine(){notice.hidden=true;notice.textContent='';box.classList.remove('stale');}
function trouble(text){
  notice.textContent=text;notice.hidden=false;box.classList.add('stale');
  status.textContent='';
}
function refresh(force){
  var q=query(), mine=++asked; if(!force&&version)q.set('version',version);
  fetch('/api/live?'+q.toString(),{headers:{'Accept':'application/json'}})
    .then(function(r){
      if(r.ok)return r.json();
      return r.json().catch(function(){return {error:'the server answered '+r.status};})
        .then(function(b){throw {said:b};});
    })
    .then(function(data){
      if(mine!==asked)return;
      fine();
      status.textContent='updated '+new Date().toLocaleTimeString();
      if(data.unchanged)return;
      version=data.version; draw(data);
    })
    .catch(function(e){
      if(mine!==asked)return;
      if(e&&e.said){var b=e.said, text=String(b.error||'the page cannot be drawn');
        trouble(text.charAt(0).toUpperCase()+text.slice(1)+'.'+(b.hint?' '+b.hint:''));}
      else{trouble('Cannot reach the server: the numbers below are from '+(status.textContent||'before')+'.');}
    });
}
function restart(){clearTimeout(typing);version='';history.replaceState(null,'','?'+query().toString());refresh(true);}
var params=new URLSearchParams(location.search);
[].forEach.call(form.elements,function(el){if(el.name&&params.get(el.name))el.value=params.get(el.name);});
form.addEventListener('input',function(e){
  if(e.target.tagName!=='INPUT')return;clearTimeout(typing);typing=setTimeout(restart,TYPING_MS);});
form.addEventListener('change',function(e){if(e.target.tagName==='SELECT')restart();});
form.addEventListener('submit',function(e){e.preventDefault();restart();});
refresh(true);
setInterval(function(){refresh(false);},REFRESH_MS);
})();
"""
#: How long typing in a filter box pauses before the page asks the server.
TYPING_MS: Final = 400


def run_href(run_id: str) -> str:
    """The path of a run's page on the server (the id percent-encoded, ``/`` too).

    Example:
        >>> run_href("run 7/a")
        '/runs/run%207%2Fa'
    """
    return "/runs/" + quote(run_id, safe="")


@cache
def plotly_js() -> str:
    """plotly.js as the installed plotly package carries it (served, so the page is offline)."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def live_shell(*, refresh_ms: int = 3000) -> str:
    """The page at ``/``: the filters, an empty body, and the script that fills and refreshes it.

    Args:
        refresh_ms: how often the page asks the server whether the store changed.
    """
    outcomes = "".join(f'<option value="{o}">{o}</option>' for o in OUTCOME_FILTERS)
    script = _LIVE_SCRIPT.replace("REFRESH_MS", str(int(refresh_ms))).replace(
        "TYPING_MS", str(TYPING_MS)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>Fleet health (live) · tracekit</title><style>{CSS}{_LIVE_CSS}</style>
<script src="/static/plotly.min.js" id="plotlyjs" async></script></head>
<body>
<header><h1>Fleet health <span class="badge">LIVE</span></h1><p id="window">loading…</p>
<form id="filters" class="filters">
<label>window<select name="since"><option value="">everything</option><option value="15m">15 minutes</option>
<option value="1h">1 hour</option><option value="24h">24 hours</option><option value="7d">7 days</option></select></label>
<label>service<input name="service" placeholder="any"></label>
<label>agent<input name="agent" placeholder="any"></label>
<label>outcome (runs list)<select name="outcome"><option value="">any</option>{outcomes}</select></label>
<span id="status"></span>
</form><p id="notice" role="alert" hidden></p></header>
<main id="content"><p class="empty">loading…</p></main>
<footer>tracekit {version_text()} · refreshed every {refresh_ms / 1000:g} s</footer>
<script>{SCRIPT}</script>
<script>{script}</script>
</body></html>
"""


def live_content(
    store: Any,
    *,
    version: str,
    since: str | None = None,
    service: str | None = None,
    agent: str | None = None,
    outcome: str | None = None,
    waiting: int = 0,
) -> dict[str, Any]:
    """The page's content for these filters, as the script draws it.

    ``waiting``: spans the collector holds until their trace's root arrives
    (counted on the incomplete card).

    Returns ``{"version", "window", "html", "figures"}``: the body with a
    placeholder for each figure, and the figures as plotly JSON.

    Raises:
        StoreError: an unknown service or agent (the message lists the known ones).
    """
    report = fleet_report(store, since=since, service=service, agent=agent)
    window = html.unescape(window_text(report))
    if not report.runs:
        body = nothing_here(store_span(store), waiting=waiting)
        return {"version": version, "window": window, "html": body, "figures": []}
    figures = [json.loads(fig.to_json()) for fig in fleet_figures(store, report)]
    examples = circle_examples(store, report.filter)
    worst = worst_runs(store, report.filter)
    recent = store.runs(
        status=outcome, service=service, agent=agent, since=since, limit=_RECENT_RUNS
    )
    degraded = report.degraded.head(_RECENT_RUNS)  # the page stays light on a big store
    links = _links([*worst["run_id"], *examples.values(), *degraded["run_id"]])
    links.update(_links(recent["run_id"]))
    body = _live_body(report, examples, worst, recent, links, outcome, waiting)
    return {"version": version, "window": window, "html": body, "figures": figures}


def _links(run_ids: Iterable[Any]) -> dict[str, str]:
    return {r: run_href(r) for r in run_ids if isinstance(r, str)}


def _fig(n: int) -> str:
    return f'<div class="tk-fig" data-fig="{n}"></div>'


def _live_body(
    report: Any,
    examples: dict[str, str],
    worst: pd.DataFrame,
    recent: pd.DataFrame,
    links: dict[str, str],
    outcome: str | None,
    waiting: int = 0,
) -> str:
    which = f"outcome {cell_text(outcome)}" if outcome else "every outcome"
    return f"""{cards(report, waiting=waiting)}
<section>{_fig(0)}</section>
<section><h2>Recursion circles</h2>
<p class="note">A circle of agents is wrong by construction: the flow will take that route again. Each links to an example run.</p>
{circles_table(report, examples, links)}
<div class="graph">{_fig(1)}</div></section>
{loops_section(report)}
<div class="grid2"><section>{_fig(2)}</section><section>{_fig(3)}</section></div>
<section style="margin-top:18px"><h2>Failures by origin</h2>
<p class="note">Where each failed run's failure began: the deepest invocation, however many levels wrapped it.</p>
{failures_table(report)}</section>
<section><h2>Degraded runs</h2>
<p class="note">These runs ended ok, but a delegation inside failed and a caller handled it, or a tool or model call failed and its agent went on. Newest first.{_more(report)}</p>
{degraded_table(report.degraded.head(_RECENT_RUNS), links)}</section>
<section><h2>Worst runs</h2><p class="note">Circles first, then the most failed calls.</p>
{worst_table(worst, links)}</section>
<section><h2>Recent runs</h2><p class="note">The newest {_RECENT_RUNS} runs of {which}; a run id opens its page.</p>
{_recent(recent, links)}</section>"""


def _more(report: Any) -> str:
    """What the live page leaves out of a long list of degraded runs, and where they all are."""
    total = len(report.degraded)
    if total <= _RECENT_RUNS:
        return ""
    return (
        f" The newest {_RECENT_RUNS:,} of {total:,}: <code>tracekit dashboard</code> and"
        " <code>tracekit runs --status degraded</code> list every one."
    )


def _recent(recent: pd.DataFrame, links: dict[str, str]) -> str:
    return table(
        recent,
        [("run_id", "run", "run"), ("start_at", "started", "text"), ("service", "service", "text"),
         ("agent", "agent", "text"), ("outcome", "outcome", "text"),
         ("invocations", "calls", "num"), ("duration_ms", "duration", "ms")],
        "No run matches these filters.",
        links=links, name="runs",
    )  # fmt: skip


def run_page(store: Any, run_id: str) -> str:
    """A run's own page: its root cause, its tree and its timeline.

    Raises:
        RunNotFoundError: no run ``run_id`` in the store.
    """
    tree = store.tree(run_id)  # raises RunNotFoundError first
    fig = timeline_figure(store.invocations(run_id))
    spec = script_json(fig.to_json())
    name = cell_text(run_id)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>run {name} · tracekit</title><style>{CSS}</style>
<script src="/static/plotly.min.js"></script></head>
<body>
<header><h1>Run <code>{name}</code></h1><p><a class="run" href="/">← fleet health</a></p></header>
<main>
<section><h2>Root cause</h2>{_root_cause(store, run_id)}</section>
{_run_loops(store, run_id)}
<section><h2>Tree</h2>{tree_to_html(tree, max_steps=_MAX_STEPS)}</section>
<section><h2>Timeline</h2><div id="timeline"></div></section>
</main>
<footer>tracekit {version_text()}</footer>
<script type="application/json" id="spec">{spec}</script>
<script>var f=JSON.parse(document.getElementById('spec').textContent);
Plotly.newPlot('timeline',f.data,f.layout,{{displaylogo:false,responsive:true}});</script>
</body></html>
"""


def _run_loops(store: Any, run_id: str) -> str:
    """The run's loops and what each cost, costliest first; nothing when it went round none."""
    frame = store.loops(run_id)
    if frame.empty:
        return ""
    tokens = frame["input_tokens"].fillna(0) + frame["output_tokens"].fillna(0)
    frame = frame.assign(_tokens=tokens).sort_values(
        ["_tokens", "circle", "stopped"], ascending=[False, True, True], kind="stable"
    )
    rows = table(
        frame,
        [("circle", "circle", "circle"), ("stopped", "stopped", "text"),
         ("revisits", "revisits", "num"), ("model_calls", "model calls", "num"),
         ("input_tokens", "input tokens", "num"), ("output_tokens", "output tokens", "num"),
         ("duration_ms", "time inside", "ms"), ("limit_code", "limit", "text")],
        "",
        name="loops",
    )  # fmt: skip
    return (
        '<section><h2>Loops</h2><p class="note">The circles this run\'s agents went round,'
        f" how each stopped and what it cost inside.</p>{rows}</section>"
    )


def _root_cause(store: Any, run_id: str) -> str:
    cause = store.root_cause(run_id)
    if cause is None:  # a child run: its root tells the story
        return '<p class="note">A child run: its root run\'s page has the root cause.</p>'
    what = f"<p>Outcome <b>{cell_text(cause.outcome)}</b> · service {cell_text(cause.service)} · entry agent {cell_text(cause.entry)}</p>"
    said = f": {cell_text(cause.message)}" if cause.message else ""
    agent, code = cell_text(cause.agent), cell_text(cause.code)
    depth = f" at depth {cause.depth}" if cause.depth else ""
    if cause.circle:
        refused = (
            f" Refused in agent <code>{agent}</code>{depth} ({code}){said}." if cause.agent else ""
        )
        return f'{what}<p>Recursion circle <span class="circle">{cell_text(cause.circle)}</span>: wrong by construction, it will happen again.{refused}</p>'
    if cause.step:
        return f"{what}<p>The failure began in step <code>{cell_text(cause.step)}</code> of agent <code>{agent}</code> ({code}){said}; the agent went on.</p>"
    if cause.agent:
        return (
            f"{what}<p>The failure began in agent <code>{agent}</code>{depth} ({code}){said}.</p>"
        )
    return f'{what}<p class="empty">No failure in this run.</p>'
