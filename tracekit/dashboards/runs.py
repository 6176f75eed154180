"""The runs a page lists, embedded: each one's tree (collapsed) and timeline, under an anchor.

A run id in a table links to ``#run-N``; following it opens that run's
``<details>``, and the page's script draws its timeline then (the figure's
data waits in a JSON block, so a page with many runs opens fast). A big
store lists many runs: at most ``limit`` are embedded, and the section says
how many were left out and how to see any of them.

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
from collections.abc import Iterable
from typing import Any, Final

from tracekit.dashboards.run_figures import timeline_figure
from tracekit.dashboards.tables import cell_text
from tracekit.errors import TracekitError
from tracekit.tree.html import tree_to_html

__all__ = ["MAX_EMBEDDED", "embedded_runs"]

#: Runs embedded in one page at most (each is a tree and a timeline's data).
MAX_EMBEDDED: Final = 60
_MAX_STEPS: Final = 400  # steps of one embedded tree: the page stays light
# Past this many invocations a run's timeline is not drawn (a bar each would
# freeze the page); its tree is folded and built on click past _MAX_STEPS.
_MAX_TIMELINE: Final = 5000


def _json_for_script(text: str) -> str:
    """JSON that cannot close its ``<script>`` or open a comment: no raw ``<``, ``>``, ``&``."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _one_run(store: Any, run_id: str, anchor: str) -> str:
    """A collapsed ``<details>`` holding the run's tree and its timeline's data."""
    head = f"run <code>{cell_text(run_id)}</code>"
    row = store.con.execute(
        "SELECT outcome, service, agent, invocations, origin_code, origin_agent"
        " FROM runs WHERE run_id = ?",
        [run_id],
    ).fetchone() or (None, None, None, 0, None, None)
    try:
        body = _run_body(store, run_id, int(row[3] or 0))
    except TracekitError as exc:
        body = f'<p class="empty">tree unavailable: {html.escape(str(exc))}</p>'
    what = " · ".join(cell_text(v) for v in row[:3])
    if row[4] is not None:  # where the failure began: the why, next to the class
        what += f" · {cell_text(row[4])} in {cell_text(row[5])}"
    return (
        f'<details class="tk-run" id="{anchor}"><summary>{head} · {what}</summary>'
        f'<div class="run-body">{body}</div></details>'
    )


def _run_body(store: Any, run_id: str, invocations: int) -> str:
    """The tree, and the timeline's data (or why a huge run has none)."""
    tree = tree_to_html(store.tree(run_id), max_steps=_MAX_STEPS, lazy=invocations > _MAX_STEPS)
    if invocations > _MAX_TIMELINE:
        return (
            f'{tree}<p class="note">No timeline: {invocations:,} invocations are too many'
            " bars for one page.</p>"
        )
    fig = timeline_figure(store.invocations(run_id))
    fig.update_layout(height=min(int(fig.layout.height or 300), 900))
    spec = f'<script type="application/json" class="tk-spec">{_json_for_script(fig.to_json())}</script>'
    return f'{tree}<div class="timeline"></div>{spec}'


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
    note = f"The {len(kept):,} runs this page lists, each with its tree and timeline."
    if len(wanted) > len(kept):
        note = (
            f"The first {len(kept):,} of the {len(wanted):,} runs this page lists"
            " (worst runs, circle examples, then the newest degraded runs); the others are"
            " plain ids in the tables: <code>tracekit tree RUN --db FILE</code> draws any run."
        )
    parts = [_one_run(store, run_id, links[run_id]) for run_id in kept]
    return f'<p class="note embed">{note}</p>{"".join(parts)}', links
