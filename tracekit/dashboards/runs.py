"""The runs a page lists, embedded: each one's tree (collapsed) and timeline, under an anchor.

A run id in a table links to ``#run-N``; following it opens that run's
``<details>``, and the page's script draws its calls then, as a tree and a
timeline, from compact JSON rows read for every listed run in one query (no
figure and no tree is built for a run nobody opens). A huge run keeps its
folded tree (:mod:`tracekit.tree.lazy_html`) and has no timeline. Each summary line says what the
run is: its outcome and why (the circle, or the agent and code its failure
began with). A big store lists many runs: at most ``limit`` are embedded,
and the section says how many were left out and how to see any of them.

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     run_id = store.runs(limit=1)["run_id"][0]
    ...     section, links = embedded_runs(store, [run_id])
    >>> links[run_id], 'class="tk-run"' in section
    ('run-0', True)
"""

from __future__ import annotations

import html
import itertools
import json
from collections.abc import Iterable
from operator import itemgetter
from typing import Any, Final

from tracekit._util.text import escape, plural
from tracekit._util.theme import NEUTRAL, OUTCOME_COLORS
from tracekit.dashboards.sections import script_json
from tracekit.dashboards.tables import cell_text
from tracekit.errors import TracekitError
from tracekit.store import run_calls, run_summaries
from tracekit.tree.html import tree_to_html

__all__ = ["MAX_EMBEDDED", "embedded_runs"]

#: Runs embedded in one page at most (each is a tree and a timeline's data).
MAX_EMBEDDED: Final = 60
_MAX_STEPS: Final = 400  # lines of a huge run's folded tree drawn at first
# Past this many invocations a run's timeline is not drawn (a bar each would
# freeze the page); its folded tree is shown instead.
_MAX_TIMELINE: Final = 5000


def _why(circle: Any, agent: Any, code: Any, step: Any = None) -> str:
    """Why a run failed, in a few words: its circle, or where its failure began.

    A failed step under an agent that went on is named after its agent:
    ``CODE in agent, step name``.
    """
    if isinstance(circle, str):
        return f'circle <span class="circle">{cell_text(circle)}</span>'
    if isinstance(agent, str):
        # the same words as tracekit tree's why: `CODE in agent`
        where = (
            f"{cell_text(agent)}, step {cell_text(step)}"
            if isinstance(step, str)
            else cell_text(agent)
        )
        return f'<span class="why">{cell_text(code)} in {where}</span>'
    return ""


def _summary(run_id: str, row: tuple[Any, ...] | None) -> str:
    """The run's one line: id, outcome (in its colour), why, service and entry agent."""
    if row is None:  # a child run: its root tells the story
        return f"run <code>{cell_text(run_id)}</code> · child run"
    outcome, service, agent, _, circle, origin, code, step = row[1:]
    colour = OUTCOME_COLORS.get(str(outcome), NEUTRAL)
    why = _why(circle, origin, code, step)
    parts = [
        f"run <code>{cell_text(run_id)}</code>",
        f'<b style="color:{html.escape(colour)}">{cell_text(outcome)}</b>',
        *([why] if why else []),
        f'<span class="where">{cell_text(service)} · {cell_text(agent)}</span>',
    ]
    return " · ".join(parts)


def _one_run(store: Any, run_id: str, anchor: str, row: Any, calls: list[Any]) -> str:
    """A collapsed ``<details>`` holding the run's calls, drawn as a tree and a timeline on open."""
    invocations = int(row[4] or 0) if row else len(calls)
    if invocations > _MAX_TIMELINE:
        body = _huge_body(store, run_id, invocations)
    elif calls:
        body = f'<div class="tk-calls"></div><div class="timeline"></div>{_calls_json(calls)}'
    else:
        body = '<p class="empty">No call recorded in this run.</p>'
    return (
        f'<details class="tk-run" id="{anchor}"><summary>{_summary(run_id, row)}</summary>'
        f'<div class="run-body">{body}</div></details>'
    )


def _calls_json(calls: list[Any]) -> str:
    """The run's calls as compact JSON rows: ``[parent, agent, node, kind, status, start_ms,
    end_ms, duration_ms, error_code]``, the parent an index into the rows (-1: none)."""
    index = {c[1]: n for n, c in enumerate(calls)}
    rows = [
        [index.get(parent, -1), escape(str(agent)), None if node is None else escape(str(node)),
         kind, status, _num(start), _num(end), _num(duration),
         None if code is None else escape(str(code))]
        for _, _, parent, agent, node, kind, status, start, end, duration, code in calls
    ]  # fmt: skip
    text = json.dumps({"rows": rows}, allow_nan=False, separators=(",", ":"))
    return f'<script type="application/json" class="tk-spec">{script_json(text)}</script>'


def _num(value: Any) -> float | None:
    """A number for JSON: a missing or NaN time is null."""
    return None if value is None or value != value else float(value)


def _huge_body(store: Any, run_id: str, invocations: int) -> str:
    """A huge run: its folded tree, built on click, and why there is no timeline."""
    try:
        tree = tree_to_html(store.tree(run_id), max_steps=_MAX_STEPS, lazy=True)
    except TracekitError as exc:
        tree = f'<p class="empty">tree unavailable: {html.escape(str(exc))}</p>'
    return (
        f'{tree}<p class="note">No timeline: {invocations:,} invocations are too many'
        " bars for one page.</p>"
    )


def embedded_runs(
    store: Any, run_ids: Iterable[str], *, limit: int = MAX_EMBEDDED
) -> tuple[str, dict[str, str]]:
    """The runs' section of the page, and each embedded run's anchor (run id -> element id).

    Args:
        store: the store the page reads.
        run_ids: the runs the page lists, most worth a look first (repeats are dropped).
        limit: embed at most this many; the rest stay plain ids in the tables.
    """
    wanted = list(dict.fromkeys(r for r in run_ids if isinstance(r, str)))
    kept = wanted[:limit]
    links = {run_id: f"run-{n}" for n, run_id in enumerate(kept)}
    if not kept:
        return '<p class="empty">No run listed on this page.</p>', links
    note = f"The {plural(len(kept), 'run')} this page lists, each with its tree and timeline."
    if len(wanted) > len(kept):
        note = (
            f"The first {len(kept):,} of the {len(wanted):,} runs this page lists"
            " (worst runs, circle examples, then the newest degraded runs); the others are"
            " plain ids in the tables: <code>tracekit tree RUN --db FILE</code> draws any run."
        )
    rows = run_summaries(store, kept)
    calls = {
        run: list(group) for run, group in itertools.groupby(run_calls(store, kept), itemgetter(0))
    }
    parts = [_one_run(store, r, links[r], rows.get(r), calls.get(r, [])) for r in kept]
    return f'<p class="note embed">{note}</p>{"".join(parts)}', links
