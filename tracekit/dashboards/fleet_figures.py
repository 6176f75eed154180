"""The fleet's figures: outcomes over time, failure rates by origin agent, latency by agent.

Each builder takes a DataFrame from :mod:`tracekit.fleet` and returns a
``plotly.graph_objects.Figure``. Names from traces go into figures
HTML-escaped: plotly draws a subset of HTML in labels and hover text, so an
agent called ``<b>x</b>`` must show those characters, not bold text.

Example:
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"bucket": pd.to_datetime(["2026-01-05"]), "outcome": ["ok"], "runs": [3]})
    >>> [t.name for t in outcomes_figure(frame).data]
    ['ok']
"""

from __future__ import annotations

import html
from typing import Any, Final

import pandas as pd
import plotly.graph_objects as go

from tracekit._util.text import escape
from tracekit._util.theme import CODE_COLORS, OUTCOME_COLORS
from tracekit.failures import OUTCOMES

__all__ = [
    "FEW_CALLS",
    "failure_rate_figure",
    "label",
    "latency_figure",
    "outcomes_figure",
    "style",
]

_FONT: Final = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"
_TOP: Final = 15  # agents shown in the bar charts


def label(value: Any) -> str:
    """A name from a trace as safe text for a figure or a page: control characters
    shown escaped (``\\x1b``), then HTML-escaped ('?' for nothing)."""
    if value is None or value != value:
        return "?"
    return html.escape(escape(str(value)))


_esc = label


def style(fig: go.Figure, *, title: str, height: int = 360) -> go.Figure:
    """The dashboard's look: white, light grid, one font, legend on top."""
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        template="plotly_white",
        font={"family": _FONT, "size": 12, "color": "#1f2328"},
        height=height,
        margin={"l": 10, "r": 10, "t": 70, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0.0, "title": None},
        hoverlabel={"font": {"family": _FONT}},
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def outcomes_figure(over_time: pd.DataFrame) -> go.Figure:
    """Runs per time bucket, stacked by outcome, recursion in its own colour.

    Args:
        over_time: ``bucket``, ``outcome``, ``runs`` (:func:`tracekit.fleet.outcomes_over_time`).
    """
    fig = go.Figure()
    present = set(over_time["outcome"].dropna())
    for outcome in (o for o in OUTCOMES if o in present):
        rows = over_time[over_time["outcome"] == outcome]
        fig.add_bar(
            x=rows["bucket"],
            y=rows["runs"],
            name=outcome,
            marker={"color": OUTCOME_COLORS[outcome], "line": {"width": 0}},
            hovertemplate=f"{outcome}: %{{y:,}} runs<br>%{{x}}<extra></extra>",
        )
    fig.update_layout(barmode="stack", bargap=0.08)
    fig.update_yaxes(title="runs")
    return style(fig, title="Outcomes over time")


def failure_rate_figure(failures: pd.DataFrame) -> go.Figure:
    """Child failures per call to each origin agent, stacked by the code the failure began with.

    Each agent's label carries its counts (failed runs of its calls). An agent
    with fewer than :data:`FEW_CALLS` calls is marked, drawn faint and listed
    below the others, and the axis is scaled to the agents with enough calls:
    one call that failed is not a 100% rate to flatten every other bar.

    Args:
        failures: ``outcome``, ``origin_agent``, ``origin_code``, ``runs``, ``rate``
            (:func:`tracekit.fleet.child_failures`); only ``failed:child`` rows are drawn.
    """
    fig = go.Figure()
    failures = failures[failures["outcome"] == "failed:child"]
    if failures.empty:
        return style(fig, title="Child-failure rate by origin agent: no child failures")
    per_agent = _per_agent(failures)
    agents = list(per_agent.index)
    shown = failures[failures["origin_agent"].isin(agents)]
    few = per_agent["calls"] < FEW_CALLS
    names = [_rate_label(a, int(r.runs), int(r.calls)) for a, r in per_agent.iterrows()]
    codes = list(
        shown.groupby("origin_code", dropna=False)["runs"].sum().sort_values(ascending=False).index
    )
    for n, code in enumerate(codes):
        rows = shown[shown["origin_code"].eq(code) if code == code else shown["origin_code"].isna()]
        rate = rows.groupby("origin_agent", dropna=False)["rate"].sum().reindex(agents)
        runs = rows.groupby("origin_agent", dropna=False)["runs"].sum().reindex(agents)
        fig.add_bar(
            y=names,
            x=rate.fillna(0).to_numpy(),
            orientation="h",
            name=_esc(code),
            marker={"color": CODE_COLORS[n % len(CODE_COLORS)], "opacity": [0.35 if f else 1.0 for f in few]},
            customdata=runs.fillna(0).astype(int).to_numpy(),
            hovertemplate=f"%{{y}}: {_esc(code)}<br>%{{x:.2%}} of calls, %{{customdata:,}} runs<extra></extra>",
        )  # fmt: skip
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="runs failed there, per call to the agent", tickformat=".1%")
    sure = per_agent.loc[~few, "rate"]
    if not sure.empty and per_agent["rate"].max() > sure.max():
        # scaled to the agents with enough calls; a small sample's longer bar runs off the edge
        fig.update_xaxes(range=[0, float(sure.max()) * 1.15])
    title = "Child-failure rate by origin agent"
    if few.any():
        title += f" · faint: fewer than {FEW_CALLS} calls, a rough rate"
    style(fig, title=title, height=max(380, 150 + 26 * len(agents)))
    # many codes: the legend goes under the plot, where it cannot cover the title
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0.0},
        margin={"t": 50, "b": 20},
    )
    return fig


#: Fewer calls than this to an agent and its rate is marked as a small sample.
FEW_CALLS: Final = 20


def _per_agent(failures: pd.DataFrame) -> pd.DataFrame:
    """Runs, calls and rate by origin agent, the top ones; listed bottom up, small samples lowest."""
    rows = failures.assign(calls=(failures["runs"] / failures["rate"].where(failures["rate"] > 0)))
    agents = rows.groupby("origin_agent", dropna=False).agg(
        runs=("runs", "sum"), rate=("rate", "sum"), calls=("calls", "max")
    )
    agents["calls"] = agents["calls"].fillna(agents["runs"]).round().astype(int)
    agents["sure"] = agents["calls"] >= FEW_CALLS
    top = agents.sort_values(["sure", "rate"], ascending=False).head(_TOP)
    return top.sort_values(["sure", "rate"])


def _rate_label(agent: Any, runs: int, calls: int) -> str:
    few = ", few" if calls < FEW_CALLS else ""
    return f"{_esc(agent)} · {runs:,} of {calls:,} call{'s' * (calls != 1)}{few}"


def latency_figure(latency: pd.DataFrame) -> go.Figure:
    """p50, p95 and p99 duration of each agent's calls, in the report's order (slowest own p95 first).

    Args:
        latency: ``agent``, ``p50_ms``, ``p95_ms``, ``p99_ms`` (:func:`tracekit.fleet.agent_latency`).
    """
    fig = go.Figure()
    rows = latency.dropna(subset=["p95_ms"]).head(_TOP).iloc[::-1]
    names = [_esc(a) for a in rows["agent"]]
    for column, label, color in (
        ("p50_ms", "p50", "#54aeff"),
        ("p95_ms", "p95", "#0969da"),
        ("p99_ms", "p99", "#0a3069"),
    ):
        fig.add_bar(
            y=names,
            x=rows[column].to_numpy() / 1000.0,
            orientation="h",
            name=label,
            marker={"color": color},
            hovertemplate=f"%{{y}} {label}: %{{x:.2f}} s<extra></extra>",
        )
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    fig.update_xaxes(title="seconds")
    return style(fig, title="Latency by agent", height=max(320, 60 + 34 * len(names)))
