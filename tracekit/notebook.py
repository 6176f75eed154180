"""The short path for investigations in Jupyter: open a run, look at it, find the cause.

:func:`open_run` takes a trace file (JSONL, gzip or OTLP JSON: whatever
``tracekit tree`` reads) or a :class:`~tracekit.store.Store` and returns a
:class:`RunView`: its tree shows inline as a collapsible HTML view, its
``invocations`` are a DataFrame, ``timeline()`` and ``icicle()`` draw it,
``outcome`` is the fleet's class for it and ``root_cause()`` names the
invocation where its failure began. Both come from the fleet's own rules
(:mod:`tracekit.failures`), so a notebook and ``tracekit fleet`` agree.

:func:`invocations_frame` and :func:`read_invocations` (from
:mod:`tracekit.tree.frame`) build an invocations DataFrame straight from a
trace's records, in the columns of ``Store.invocations()``.

Example:
    >>> run = open_run("sample_traces/recursion_circle.jsonl")
    >>> run  # in Jupyter: the header and a collapsible tree
    <RunView run run-circ · front_desk · failed:recursion, 10ms: 3 invocations>
    >>> print(run)
    run run-circ · front_desk · failed:recursion, 10ms
    route
    delegate -> orders (error AGENT_RECURSION <- AGENT_RECURSION in orders: orders -> billing -> orders, 7ms)
      lookup
      delegate -> billing (error AGENT_RECURSION <- AGENT_RECURSION in orders: orders -> billing -> orders, 4ms)
        check
        delegate -> orders (refused AGENT_RECURSION: orders -> billing -> orders)
    >>> run.invocations[["agent", "status", "duration_ms"]]
         agent   status  duration_ms
    0   orders    error          7.0
    1  billing    error          4.0
    2   orders  refused          0.0
    >>> fig = run.timeline()  # a plotly figure: a bar per invocation, a trace per colour
    >>> [(bars.type, bars.name) for bars in fig.data]
    [('bar', 'recursion')]
    >>> cause = run.root_cause()  # where the failure began
    >>> cause.agent, cause.code, cause.depth
    ('orders', 'AGENT_RECURSION', 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pandas as pd

from tracekit._util.files import is_store_file
from tracekit._util.text import format_ms
from tracekit.errors import TracekitError
from tracekit.events import Event
from tracekit.failures import Finding, classify_run, run_facts
from tracekit.failures.rules import FAILED_STATUSES, RECURSION
from tracekit.intake import read_trace
from tracekit.tree import AgentTree, Forest, RunTree, build_forest
from tracekit.tree.frame import INVOCATION_COLUMNS, invocations_frame, read_invocations
from tracekit.tree.html import tree_to_html
from tracekit.tree.text import describe_agent_tree

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from tracekit.tree.diff import RunDiff, Slower

__all__ = [
    "INVOCATION_COLUMNS",
    "RootCause",
    "RunView",
    "SessionView",
    "invocations_frame",
    "open_run",
    "open_session",
    "read_invocations",
]


_LAZY_FROM = 5000  # invocations past which a run's HTML is built on click


@dataclass(frozen=True)
class RootCause:
    """Where a run's failure began, as the fleet classification finds it.

    Attributes:
        invocation_id: the origin invocation.
        agent: the agent that failed (or was refused) first.
        node: the caller's node that made the call.
        code: the code the failure began with: the innermost ``cause`` of the
            origin's error (``REFUND_API_TIMEOUT`` under ``AGENT_FAILED``), or
            its own code (``AGENT_RECURSION``, ``AGENT_NOT_ALLOWED``, ...).
        message: the message that goes with ``code``.
        reported: the code the origin invocation itself exited with.
        chain: the recursion circle, when the origin is a recursion refusal.
        depth: 1 for an invocation made by the root run.
        path: the agents from the root's call down to the origin.
        wrapped: how many callers above it failed because of it (0 when a
            caller handled it: the run was degraded).
    """

    invocation_id: str
    agent: str
    node: str | None
    code: str | None
    message: str | None
    reported: str | None
    chain: list[str] | None
    depth: int
    path: list[str]
    wrapped: int

    @property
    def is_recursion(self) -> bool:
        """True for a circle of agents: wrong by construction, not a flaky child."""
        return self.reported == RECURSION

    def __str__(self) -> str:
        what = f"{self.code}" + (f": {' -> '.join(self.chain)}" if self.chain else "")
        return f"{' -> '.join(self.path)} ({what}) at depth {self.depth}"


@dataclass(repr=False)
class RunView:
    """One run, ready to look at in a notebook.

    In Jupyter the object shows as its header and collapsible tree;
    ``str(run)`` is the header and the ``tracekit tree`` text.

    Attributes:
        run_id: the root run's id.
        agent: the root agent, when known.
        status: ``ok``, ``error`` or ``running`` (no end seen), as the run reported.
        duration_ms: the run's duration, when it ended.
        tree: the run's :class:`~tracekit.tree.AgentTree`.
        invocations: its invocations (columns: :data:`INVOCATION_COLUMNS`,
            in tree order; from a store, its extra columns too).
        finding: the fleet classification's :class:`~tracekit.failures.Finding`
            (outcome, circle, origin agent and code); None for a run that is
            not a root run of its trace.
        origin_id: the invocation where the failure began, if one did.
    """

    run_id: str
    agent: str | None
    status: str | None
    duration_ms: float | None
    tree: AgentTree
    invocations: pd.DataFrame
    finding: Finding | None = None
    origin_id: str | None = None

    @property
    def outcome(self) -> str | None:
        """``ok``, ``degraded``, ``failed:recursion``, ``failed:child``, ... (see ``docs/fleet.md``)."""
        return self.finding.outcome if self.finding is not None else None

    @property
    def header(self) -> str:
        """``run <id> · <agent> · <outcome or status>, <duration>``."""
        bits = [f"run {self.run_id}"]
        if self.agent:
            bits.append(self.agent)
        state = self.outcome or self.status or "unknown"
        if self.duration_ms is not None:
            state += f", {format_ms(self.duration_ms)}"
        return " · ".join([*bits, state])

    def root_cause(self) -> RootCause | None:
        """Where this run's failure began, or None when no invocation failed.

        The origin is the fleet classification's: from the failed call the
        root made, down through each caller that only wrapped its callee's
        failure. For a degraded run, it is the failure a caller handled.
        """
        if self.origin_id is None:
            return None
        return _cause_at(self.invocations, self.origin_id, self.finding)

    def timeline(self, **layout: Any) -> go.Figure:
        """The run's timeline (see ``tracekit.dashboards.run_figures.timeline_figure``)."""
        from tracekit.dashboards.run_figures import timeline_figure

        title = layout.pop("title", self.header)
        return timeline_figure(self.invocations, title=title).update_layout(**layout)

    def icicle(self, **layout: Any) -> go.Figure:
        """The run as an icicle of its invocations (``run_figures.icicle_figure``)."""
        from tracekit.dashboards.run_figures import icicle_figure

        fig = icicle_figure(self.invocations, root_label=self.agent or self.run_id)
        return fig.update_layout(**layout)

    def sunburst(self, **layout: Any) -> go.Figure:
        """The run as a sunburst of its invocations (``run_figures.sunburst_figure``)."""
        from tracekit.dashboards.run_figures import sunburst_figure

        fig = sunburst_figure(self.invocations, root_label=self.agent or self.run_id)
        return fig.update_layout(**layout)

    def diff(self, other: RunView | str | Path, *, slower: str | Slower | None = None) -> RunDiff:
        """Compare this run (before) with ``other`` (after, a RunView or a trace file).

        The result prints as ``tracekit diff`` does and shows in Jupyter as a
        table of the calls added, removed, changed status or slower
        (:mod:`tracekit.tree.diff`); ``slower`` is ``"50%"``, ``"200ms"`` or a
        :class:`~tracekit.tree.diff.Slower`.

        Example:
            >>> run = open_run("sample_traces/recursion_circle.jsonl")
            >>> run.diff(run).changes
            []
        """
        from tracekit.tree.diff import RunSide, Slower, diff_steps

        after = other if isinstance(other, RunView) else open_run(other)
        threshold = Slower.parse(slower) if isinstance(slower, str) else slower
        return diff_steps(
            self.tree,
            after.tree,
            slower=threshold,
            a_side=RunSide(runId=self.run_id, agent=self.agent, status=self.outcome or self.status,
                           durationMs=self.duration_ms),
            b_side=RunSide(runId=after.run_id, agent=after.agent, status=after.outcome or after.status,
                           durationMs=after.duration_ms),
        )  # fmt: skip

    def __str__(self) -> str:
        return f"{self.header}\n{describe_agent_tree(self.tree)}"

    def __repr__(self) -> str:
        return f"<RunView {self.header}: {len(self.invocations)} invocations>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        # A huge run is drawn folded and built on click: the cell stays light.
        lazy = len(self.invocations) > _LAZY_FROM
        return tree_to_html(self.tree, title=self.header, lazy=lazy)


def _cause_at(frame: pd.DataFrame, origin_id: str, finding: Finding | None) -> RootCause:
    """Describe the origin row, and the callers between it and the root."""
    rows = frame.set_index("invocation_id", drop=False)
    origin = rows.loc[origin_id]
    path = [origin]
    while isinstance(path[-1]["parent_invocation_id"], str):
        parent = path[-1]["parent_invocation_id"]
        if parent not in rows.index:
            break
        path.append(rows.loc[parent])
    code, message = _innermost(origin["error"])
    return RootCause(
        invocation_id=origin_id,
        agent=str(origin["agent"]),
        node=_value(origin["node"]),
        code=(finding.origin_code if finding is not None else None) or code,
        message=message,
        reported=_value(origin["error_code"]),
        chain=_chain(origin["chain"]),
        depth=int(origin["depth"]),
        path=[str(row["agent"]) for row in reversed(path)],
        wrapped=sum(1 for row in path[1:] if row["status"] in FAILED_STATUSES),
    )


def _chain(value: Any) -> list[str] | None:
    if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str) and len(value):
        return [str(name) for name in value]
    return None


def _innermost(error: Any) -> tuple[str | None, str | None]:
    """The code and message at the bottom of an error's ``cause`` chain (JSON text)."""
    if not isinstance(error, str | bytes):
        return None, None
    found = msgspec.json.decode(error)
    while isinstance(found.get("cause"), dict):
        found = found["cause"]
    return found.get("code"), found.get("message")


def _value(value: Any) -> Any:
    return None if value is None or pd.isna(value) else value


def open_run(source: Any, run_id: str | None = None) -> RunView:
    """Open one run from a trace file or a store, for a notebook.

    Args:
        source: a trace file path (JSONL, ``.gz``, OTLP JSON), a
            :class:`~tracekit.store.Store`, or a store file's path (opened
            read-only for the call).
        run_id: the root run to open. For a file, by default its first root
            run; for a store, required unless the store holds one run.

    Raises:
        RunNotFoundError: the run is not there (the message lists what is).
        TracekitError: the file holds no run, or the store several and none is named.

    Example:
        >>> run = open_run("sample_traces/recursion_circle.jsonl")
        >>> run.outcome, run.root_cause().chain
        ('failed:recursion', ['orders', 'billing', 'orders'])
    """
    if isinstance(source, str | Path) and is_store_file(source):
        from tracekit.store import Store

        with Store(source, read_only=True) as store:
            return _open_store(store, run_id)
    if isinstance(source, str | Path):
        return _open_file(Path(source), run_id)
    if hasattr(source, "invocations") and hasattr(source, "events"):
        return _open_store(source, run_id)
    raise TypeError(f"open_run takes a trace file path or a Store, not {type(source).__name__}")


def _open_file(path: Path, run_id: str | None) -> RunView:
    records = read_trace(str(path)).events
    run = _choose(build_forest(records), run_id, str(path))
    frame = invocations_frame(records)
    mine = frame[frame["root_run_id"] == run.runId].reset_index(drop=True)
    finding = _finding(records, str(run.runId))
    return RunView(
        run_id=str(run.runId),
        agent=run.agent,
        status=run.status,
        duration_ms=run.durationMs,
        tree=run.steps,
        invocations=mine,
        finding=finding,
        origin_id=_origin_id(finding),
    )


def _finding(records: list[Event], run_id: str) -> Finding | None:
    for facts in run_facts(records):
        if facts.run_id == run_id:
            return classify_run(facts)
    return None  # an orphan or a cycle: not a root run, so not classified


def _origin_id(finding: Finding | None) -> str | None:
    if finding is None or finding.origin is None:
        return None
    return finding.origin.invocation_id


def _choose(forest: Forest, run_id: str | None, where: str) -> RunTree:
    if run_id is not None:
        return forest.run(run_id, source=where)
    if not forest.runs:
        raise TracekitError(f"{where} holds no run")
    return forest.runs[0]


def _open_store(store: Any, run_id: str | None) -> RunView:
    """A run from the store: its own rows, so the store's extra columns come along."""
    from tracekit.dashboards.run_figures import tree_order  # pandas only, plotly is loaded

    run_id = run_id if run_id is not None else _only_run(store)
    records = store.events(run_id)  # raises StoreError, naming the store, if there is no such run
    row = store.run_row(run_id).iloc[0]
    frame = tree_order(store.invocations(run_id)).drop(columns="row")
    # DuckDB gives a list column as arrays and NA; a file frame has lists and None.
    frame["chain"] = [_chain(value) for value in frame["chain"]]
    frame["models"] = [_chain(value) for value in frame["models"]]
    finding = _finding(records, run_id)
    return RunView(
        run_id=run_id,
        agent=_value(row["agent"]),
        status=_value(row["status"]),
        duration_ms=_value(row["duration_ms"]) if row["has_end"] else None,
        tree=store.tree(run_id),
        invocations=frame,
        finding=finding,
        origin_id=_origin_id(finding),
    )


def _only_run(store: Any) -> str:
    listed = store.runs(limit=2)
    if len(listed) != 1:
        raise TracekitError(
            f"{store.path} holds {'no' if listed.empty else 'several'} runs: name one",
            hint="store.runs() lists them; open_run(store, run_id)",
        )
    return str(listed["run_id"].iloc[0])


@dataclass(repr=False)
class SessionView:
    """The runs of one session (runs sharing a session id), in order of start.

    ``str(view)`` is what ``tracekit session`` prints; Jupyter shows a table.

    Attributes:
        session_id: the session's id.
        runs: its runs (``run_id``, ``start_at``, ``agent``, ``outcome``,
            ``status``, ``duration_ms``, ``invocations``, ``input_tokens``,
            ``output_tokens``, ``service``, ``session_id``), oldest first.
    """

    session_id: str
    runs: pd.DataFrame

    @property
    def summary(self) -> dict[str, Any]:
        """Runs, failed runs and tokens of the session."""
        from tracekit.store.sessions import session_summary

        return session_summary(self.session_id, self.runs)

    def __str__(self) -> str:
        from tracekit.store.sessions import describe_session

        return describe_session(self.session_id, self.runs)

    def __repr__(self) -> str:
        return f"<SessionView {str(self).splitlines()[0]}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        import html

        from tracekit._util.text import escape

        head = html.escape(str(self).splitlines()[0])
        # Names are data: control characters shown escaped, then HTML-escaped by pandas.
        shown = self.runs.map(lambda v: escape(v) if isinstance(v, str) else v)
        table = shown.to_html(index=False, escape=True, na_rep="")
        return f"<div class='tracekit-session'><p><b>{head}</b></p>{table}</div>"


def open_session(db: Any, session_id: str) -> SessionView:
    """The runs of one session from a store (a path, or an open :class:`~tracekit.store.Store`).

    Raises:
        SessionNotFoundError: no run has this session; the error names some that do.

    Example:
        >>> from tracekit.store import Store
        >>> with Store("fleet.duckdb", read_only=True) as store:
        ...     first = store.sql("SELECT session_id FROM runs ORDER BY start_ms LIMIT 1")
        ...     view = open_session(store, first.session_id[0])
        >>> str(view).startswith("session sess-"), view.summary["runs"] == len(view.runs)
        (True, True)
    """
    from tracekit.store import Store

    if isinstance(db, Store):
        return SessionView(session_id, db.session(session_id))
    with Store(db, read_only=True) as store:
        return SessionView(session_id, store.session(session_id))
