"""Run figures: one bar per invocation, overlapping subagents overlap, colours by status."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from tracekit._util.theme import RECURSION_COLOR, STATUS_COLORS
from tracekit.dashboards.run_figures import (
    icicle_figure,
    sunburst_figure,
    timeline_figure,
    tree_order,
)
from tracekit.notebook import read_invocations

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


def _bars(fig: go.Figure) -> dict[str, tuple[float, float, int, str]]:
    """Each bar by agent label: (start, end, row, colour)."""
    rows = dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext, strict=True))
    found = {}
    for trace in fig.data:
        assert isinstance(trace, go.Bar) and trace.orientation == "h"
        for base, width, row in zip(trace.base, trace.x, trace.y, strict=True):
            found[rows[row].strip("\u2002")] = (base, base + width, row, trace.marker.color)
    return found


def test_one_bar_per_invocation_on_every_sample() -> None:
    for path in sorted(SAMPLES.glob("*.jsonl")):
        frame = read_invocations(path)
        fig = timeline_figure(frame)
        assert sum(len(trace.x) for trace in fig.data) == len(frame), path.name
        assert sorted(fig.layout.yaxis.tickvals) == list(range(len(frame)))


def test_background_subagents_overlap_on_the_time_axis() -> None:
    fig = timeline_figure(read_invocations(SAMPLES / "background_subagents.jsonl"))
    bars = _bars(fig)
    (s1, e1, r1, _), (s2, e2, r2, _) = bars["researcher"], bars["fact_checker"]
    assert max(s1, s2) < min(e1, e2)  # both ran at once
    assert r1 != r2  # on rows of their own, so both are visible
    assert e1 - s1 == 40 and e2 - s2 == 25  # widths are the real durations


def test_bars_are_coloured_by_status_and_named_in_the_legend() -> None:
    fig = timeline_figure(read_invocations(SAMPLES / "background_subagents.jsonl"))
    bars = _bars(fig)
    assert bars["researcher"][3] == STATUS_COLORS["ok"]
    assert bars["translator"][3] == STATUS_COLORS["cancelled"]
    assert {trace.name for trace in fig.data} == {"ok", "cancelled"}


def test_callees_sit_below_their_caller_indented_by_depth() -> None:
    fig = timeline_figure(read_invocations(SAMPLES / "recursion_circle.jsonl"))
    labels = [fig.layout.yaxis.ticktext[i] for i in sorted(fig.layout.yaxis.tickvals)]
    assert [label.strip("\u2002") for label in labels] == ["orders", "billing", "orders"]
    indents = [len(label) - len(label.lstrip("\u2002")) for label in labels]
    assert indents == [0, 2, 4]
    assert fig.layout.yaxis.autorange == "reversed"


def test_a_running_invocation_is_drawn_to_the_last_time_seen() -> None:
    frame = read_invocations(SAMPLES / "crashed_run.jsonl")
    assert list(frame["status"]) == ["running"]
    fig = timeline_figure(frame)
    assert fig.data[0].name == "running"
    assert fig.data[0].marker.color == STATUS_COLORS["running"]


def test_tree_order_puts_callers_first_and_callees_by_start() -> None:
    frame = pd.DataFrame(
        {
            "invocation_id": ["c2", "c1", "p", "g"],
            "parent_invocation_id": ["p", "p", None, "c1"],
            "start_ms": [5.0, 2.0, 1.0, 3.0],
        }
    )
    assert list(tree_order(frame)["invocation_id"]) == ["p", "c1", "g", "c2"]


def test_icicle_and_sunburst_nest_invocations_under_their_callers() -> None:
    frame = read_invocations(SAMPLES / "recursion_circle.jsonl")
    for build in (icicle_figure, sunburst_figure):
        trace = build(frame, root_label="front_desk").data[0]
        assert len(trace.ids) == len(frame) + 1
        parents = dict(zip(trace.ids, trace.parents, strict=True))
        assert parents["inv-b1"] == "inv-o1" and parents["inv-o2"] == "inv-b1"
        colors = dict(zip(trace.ids, trace.marker.colors, strict=True))
        assert colors["inv-o2"] == RECURSION_COLOR
    child = icicle_figure(read_invocations(SAMPLES / "child_failure.jsonl")).data[0]
    assert set(child.marker.colors[1:]) == {STATUS_COLORS["error"]}


def test_hostile_names_are_escaped_in_every_figure() -> None:
    hostile = "<script>alert(1)</script>"
    frame = read_invocations(SAMPLES / "recursion_circle.jsonl")
    frame["agent"] = hostile
    frame["error_code"] = hostile
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for fig in (timeline_figure(frame), icicle_figure(frame, root_label=hostile)):
        text = fig.to_json().replace("\\u003c", "<").replace("\\u002f", "/")
        assert "<script" not in text.lower()
        assert escaped in text
    timeline = timeline_figure(frame)
    assert all(escaped in a.text for a in timeline.layout.annotations)


def test_an_instant_refusal_still_shows_as_a_sliver() -> None:
    fig = timeline_figure(read_invocations(SAMPLES / "recursion_circle.jsonl"))
    refused = next(trace for trace in fig.data if trace.name == "refused")
    assert refused.x[0] > 0 and refused.marker.color == STATUS_COLORS["refused"]
    assert refused.customdata[0][4] == "0.0 ms"  # hover keeps the real duration


def test_labels_are_indented_by_depth_in_the_margin() -> None:
    fig = timeline_figure(read_invocations(SAMPLES / "child_failure.jsonl"))
    shifts = [a.xshift for a in sorted(fig.layout.annotations, key=lambda a: a.y)]
    assert len(shifts) == 2 and shifts[1] > shifts[0]
    assert fig.layout.yaxis.showticklabels is False
