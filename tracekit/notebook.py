"""The short path for investigations in Jupyter: open a run, look at it, find the cause.

:func:`open_run` takes a trace file (JSONL, gzip or OTLP JSON: whatever
``tracekit tree`` reads) or a :class:`~tracekit.store.Store` and returns a
:class:`RunView`: its tree shows inline as a collapsible HTML view, its
``invocations`` are a DataFrame, ``timeline()`` and ``icicle()`` draw it, and
``root_cause()`` names the invocation where its failure began.

:func:`invocations_frame` and :func:`read_invocations` build an invocations
DataFrame straight from a trace's records, with no store, in the columns of
``Store.invocations()`` (see :data:`INVOCATION_COLUMNS` and
``docs/notebooks.md``).

Example:
    >>> run = open_run("sample_traces/recursion_circle.jsonl")  # doctest: +SKIP
    >>> run                                # the tree, inline            # doctest: +SKIP
    >>> run.invocations[["agent", "status", "duration_ms"]]             # doctest: +SKIP
    >>> run.timeline()                     # a plotly figure              # doctest: +SKIP
    >>> run.root_cause()                   # where the failure began     # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec
import numpy as np
import pandas as pd

from tracekit.describe import describe_agent_tree, format_ms
from tracekit.errors import TracekitError
from tracekit.events import Enter, Event, Exit
from tracekit.readers import read_trace
from tracekit.tree import AgentStep, AgentTree, RunTree, Step, build_forest
from tracekit.tree_html import tree_to_html

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = [
    "INVOCATION_COLUMNS",
    "RootCause",
    "RunView",
    "invocations_frame",
    "open_run",
    "read_invocations",
    "root_cause",
    "root_causes",
]

#: The columns of an invocations DataFrame, as in the store's ``invocations`` table.
INVOCATION_COLUMNS: Final[tuple[str, ...]] = (
    "invocation_id",  # the invocation's own id
    "run_id",  # the child run it started
    "parent_run_id",  # the caller's run
    "root_run_id",  # the root run of the whole tree
    "parent_invocation_id",  # the invocation whose run made this call (None at depth 1)
    "agent",  # the agent called
    "node",  # the caller's node that delegated
    "kind",  # delegate | handoff | subagent
    "service",  # the deployment that emitted it
    "trace_id",  # the record's traceId (OTLP trace), when given
    "start_ms",  # milliseconds since the epoch (None if no enter was seen)
    "end_ms",  # milliseconds since the epoch (None while running)
    "start_at",  # start_ms as a UTC timestamp
    "end_at",  # end_ms as a UTC timestamp
    "duration_ms",  # as the exit reported it
    "status",  # ok | error | refused | cancelled | pending | running
    "ok",  # True, False, or None while running
    "error_code",  # AGENT_FAILED, AGENT_RECURSION, ... or None
    "error_message",
    "chain",  # the recursion circle as a list of agents, when refused for it
    "error",  # the whole error as JSON text, causes nested (None when ok)
    "depth",  # 1 for an invocation made by the root run
)
_FAILED: Final = frozenset({"error", "refused"})


def invocations_frame(events: Iterable[Event]) -> pd.DataFrame:
    """Every invocation of a trace's records as a DataFrame (no store needed).

    The trace is rebuilt with :func:`tracekit.tree.build_forest`, so records
    may come in any order, duplicates count once and an exit without an
    enter still gives a row. Columns are :data:`INVOCATION_COLUMNS`, with the
    same names and meaning as ``Store.invocations()``; rows are in tree order
    (each caller before its callees), one tree after another.

    Example:
        >>> from tracekit.events import Enter, Exit
        >>> frame = invocations_frame([
        ...     Enter(ts=0, invocationId="i", runId="c", parentRunId="r", agent="sql"),
        ...     Exit(ts=11, invocationId="i", runId="c", parentRunId="r", agent="sql", durationMs=11),
        ... ])
        >>> frame[["agent", "status", "duration_ms", "depth"]].to_dict("records")
        [{'agent': 'sql', 'status': 'ok', 'duration_ms': 11.0, 'depth': 1}]
    """
    records = list(events)
    origins = _origins(records)
    rows = [
        _row(step, parent, depth, run.runId, origins)
        for run in build_forest(records).runs
        for step, parent, depth in _invocations(run.steps)
    ]
    return _frame(rows)


def read_invocations(path: str | Path) -> pd.DataFrame:
    """Read a trace file and return :func:`invocations_frame` of its records.

    Bad lines are skipped, as ``tracekit tree`` skips them.

    Example:
        >>> read_invocations("sample_traces/agent_orchestrator.jsonl")  # doctest: +SKIP
    """
    return invocations_frame(read_trace(str(path)).events)


def _origins(records: Sequence[Event]) -> dict[str, tuple[str | None, str | None]]:
    """Each invocation's service and trace id, from its first record that has either."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for event in records:
        if isinstance(event, (Enter, Exit)) and (event.service or event.traceId):
            found.setdefault(event.invocationId, (event.service, event.traceId))
    return found


def _invocations(tree: Sequence[Step]) -> Iterator[tuple[AgentStep, AgentStep | None, int]]:
    """Yield (invocation, calling invocation, depth) in pre-order, without recursion."""
    stack: list[tuple[Iterator[Step], AgentStep | None]] = [(iter(tree), None)]
    while stack:
        steps, owner = stack[-1]
        step = next(steps, None)
        if step is None:
            stack.pop()
        elif isinstance(step, AgentStep):
            yield step, owner, len(stack)
            if step.steps:
                stack.append((iter(step.steps), step))


def _row(
    step: AgentStep,
    parent: AgentStep | None,
    depth: int,
    root: str | None,
    origins: dict[str, tuple[str | None, str | None]],
) -> dict[str, Any]:
    error = step.error
    service, trace_id = origins.get(step.invocationId, (None, None))
    return {
        "invocation_id": step.invocationId,
        "run_id": step.runId,
        "parent_run_id": step.parentRunId,
        "root_run_id": root,
        "parent_invocation_id": parent.invocationId if parent is not None else None,
        "agent": step.agent,
        "node": step.node,
        "kind": step.kind,
        "service": service,
        "trace_id": trace_id,
        "start_ms": step.startTs,
        "end_ms": step.endTs,
        "duration_ms": step.durationMs,
        "status": step.status,
        "ok": step.ok,
        "error_code": error.code if error is not None else None,
        "error_message": error.message if error is not None else None,
        "chain": list(error.chain) if error is not None and error.chain else None,
        "error": msgspec.json.encode(error).decode() if error is not None else None,
        "depth": depth,
    }


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[c for c in INVOCATION_COLUMNS if not c.endswith("_at")])
    for column in ("start_ms", "end_ms", "duration_ms"):
        frame[column] = frame[column].astype("float64")
    frame["depth"] = frame["depth"].astype("int64")
    frame["ok"] = frame["ok"].astype("boolean")
    frame["start_at"] = pd.to_datetime(frame["start_ms"], unit="ms")
    frame["end_at"] = pd.to_datetime(frame["end_ms"], unit="ms")
    return frame[list(INVOCATION_COLUMNS)]


@dataclass(frozen=True)
class RootCause:
    """Where a run's failure began: the deepest failed invocation on the failing path.

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
        wrapped: how many callers above it failed because of it.
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
        return self.code == "AGENT_RECURSION"

    def __str__(self) -> str:
        what = f"{self.code}" + (f": {' -> '.join(self.chain)}" if self.chain else "")
        return f"{' -> '.join(self.path)} ({what}) at depth {self.depth}"


def root_cause(invocations: pd.DataFrame) -> RootCause | None:
    """Find where the failure of one run's invocations began, or None if none failed.

    Starting from the failed invocations the root run made, follow failed
    callees down: a recursion refusal travels up unchanged, so a callee with
    the same ``AGENT_RECURSION`` code is followed first; otherwise the last
    failed callee to end (the one its caller gave up on). The invocation
    where that path stops is the origin; ``wrapped`` counts the callers above
    it that failed because of it.

    Example:
        >>> frame = pd.DataFrame({"invocation_id": ["a", "b"], "parent_invocation_id": [None, "a"],
        ...     "agent": ["billing", "refunds"], "node": ["x", "y"], "status": ["error", "error"],
        ...     "error_code": ["AGENT_FAILED", "TIMEOUT"], "error_message": ["", "slow"],
        ...     "chain": [None, None], "depth": [1, 2], "end_ms": [5.0, 4.0]})
        >>> str(root_cause(frame))
        'billing -> refunds (TIMEOUT) at depth 2'
    """
    failed = invocations[invocations["status"].isin(_FAILED)]
    if failed.empty:
        return None
    ids = set(invocations["invocation_id"])
    top = failed[~failed["parent_invocation_id"].isin(ids)]
    path = [_pick(top if not top.empty else failed, None)]
    while True:
        below = failed[failed["parent_invocation_id"] == path[-1]["invocation_id"]]
        if below.empty:
            break
        path.append(_pick(below, path[-1]["error_code"]))
    return _cause(path)


def root_causes(invocations: pd.DataFrame) -> pd.DataFrame:
    """The root cause of every run that has a failed invocation, one row per run.

    Applies :func:`root_cause` to each root run's invocations (a file's, or
    ``Store.invocations()``). Columns: ``root_run_id``, ``invocation_id``,
    ``agent``, ``node``, ``code``, ``reported``, ``circle`` (the chain as
    ``a -> b -> a``, for recursion), ``depth``, ``wrapped``, ``path``.

    Example:
        >>> root_causes(read_invocations("sample_traces/child_failure.jsonl"))  # doctest: +SKIP
          root_run_id invocation_id    agent  ...               code  ...
        0    run-fail         inv-r  refunds  ... REFUND_API_TIMEOUT  ...
    """
    failed_runs = invocations.loc[invocations["status"].isin(_FAILED), "root_run_id"].unique()
    mine = invocations[invocations["root_run_id"].isin(failed_runs)]
    rows = []
    for run_id, frame in mine.groupby("root_run_id", sort=False):
        cause = root_cause(frame)
        if cause is not None:
            rows.append(
                {
                    "root_run_id": run_id,
                    "invocation_id": cause.invocation_id,
                    "agent": cause.agent,
                    "node": cause.node,
                    "code": cause.code,
                    "reported": cause.reported,
                    "circle": " -> ".join(cause.chain) if cause.chain else None,
                    "depth": cause.depth,
                    "wrapped": cause.wrapped,
                    "path": " -> ".join(cause.path),
                }
            )
    return pd.DataFrame(rows, columns=list(_CAUSE_COLUMNS))


_CAUSE_COLUMNS: Final = (
    "root_run_id",
    "invocation_id",
    "agent",
    "node",
    "code",
    "reported",
    "circle",
    "depth",
    "wrapped",
    "path",
)


def _pick(candidates: pd.DataFrame, code: Any) -> dict[str, Any]:
    if code == "AGENT_RECURSION":
        same = candidates[candidates["error_code"] == code]
        candidates = same if not same.empty else candidates
    ends = candidates["end_ms"].fillna(float("inf"))
    return dict(candidates.loc[ends.sort_values(kind="stable").index[-1]])


def _cause(path: list[dict[str, Any]]) -> RootCause:
    origin = path[-1]
    chain = origin.get("chain")
    reported = _value(origin.get("error_code"))
    code, message = _innermost(origin.get("error"))
    return RootCause(
        invocation_id=str(origin["invocation_id"]),
        agent=str(origin["agent"]),
        node=_value(origin.get("node")),
        code=code or reported,
        message=message if code else _value(origin.get("error_message")),
        reported=reported,
        chain=_chain(chain),
        depth=int(origin["depth"]),
        path=[str(row["agent"]) for row in path],
        wrapped=len(path) - 1,
    )


def _chain(value: Any) -> list[str] | None:
    if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str) and len(value):
        return [str(name) for name in value]
    return None


def _innermost(error: Any) -> tuple[str | None, str | None]:
    """The code and message at the bottom of an error's ``cause`` chain."""
    if isinstance(error, (str, bytes)):
        error = msgspec.json.decode(error)
    if not isinstance(error, dict):
        return None, None
    while isinstance(error.get("cause"), dict):
        error = error["cause"]
    return error.get("code"), error.get("message")


def _value(value: Any) -> Any:
    return None if value is None or (not isinstance(value, list) and pd.isna(value)) else value


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
        invocations: its invocations (columns: :data:`INVOCATION_COLUMNS`).
    """

    run_id: str
    agent: str | None
    status: str | None
    duration_ms: float | None
    tree: AgentTree
    invocations: pd.DataFrame

    @property
    def header(self) -> str:
        """``run <id> · <agent> · <status>, <duration>``."""
        bits = [f"run {self.run_id}"]
        if self.agent:
            bits.append(self.agent)
        state = self.status or "unknown"
        if self.duration_ms is not None:
            state += f", {format_ms(self.duration_ms)}"
        return " · ".join([*bits, state])

    def root_cause(self) -> RootCause | None:
        """Where this run's failure began (see :func:`root_cause`), or None."""
        return root_cause(self.invocations)

    def timeline(self, **layout: Any) -> go.Figure:
        """The run's timeline (see ``tracekit.dashboards.run_figures.timeline_figure``)."""
        from tracekit.dashboards.run_figures import timeline_figure

        return timeline_figure(
            self.invocations, title=layout.pop("title", self.header)
        ).update_layout(**layout)

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

    def __str__(self) -> str:
        return f"{self.header}\n{describe_agent_tree(self.tree)}"

    def __repr__(self) -> str:
        return f"<RunView {self.header}: {len(self.invocations)} invocations>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        return tree_to_html(self.tree, title=self.header)


def open_run(source: Any, run_id: str | None = None) -> RunView:
    """Open one run from a trace file or a store, for a notebook.

    Args:
        source: a trace file path (JSONL, ``.gz``, OTLP JSON) or a
            :class:`~tracekit.store.Store`.
        run_id: the root run to open. For a file, by default its first root
            run; for a store, required unless the store holds one run.

    Raises:
        TracekitError: the run is not there (the message lists what is).

    Example:
        >>> run = open_run("sample_traces/recursion_circle.jsonl")  # doctest: +SKIP
        >>> run.root_cause().chain                                    # doctest: +SKIP
        ['orders', 'billing', 'orders']
    """
    if isinstance(source, (str, Path)):
        return _open_file(Path(source), run_id)
    if hasattr(source, "invocations") and hasattr(source, "tree"):
        return _open_store(source, run_id)
    raise TypeError(f"open_run takes a trace file path or a Store, not {type(source).__name__}")


def _open_file(path: Path, run_id: str | None) -> RunView:
    records = read_trace(str(path)).events
    runs = build_forest(records).runs
    run = _choose(runs, run_id, str(path))
    frame = invocations_frame(records)
    mine = frame[frame["root_run_id"] == run.runId].reset_index(drop=True)
    return RunView(
        run_id=str(run.runId),
        agent=run.agent,
        status=run.status,
        duration_ms=run.durationMs,
        tree=run.steps,
        invocations=mine,
    )


def _choose(runs: list[RunTree], run_id: str | None, where: str) -> RunTree:
    if not runs:
        raise TracekitError(f"{where} holds no run")
    if run_id is None:
        return runs[0]
    for run in runs:
        if run.runId == run_id:
            return run
    known = ", ".join(str(r.runId) for r in runs[:5]) + (", ..." if len(runs) > 5 else "")
    raise TracekitError(f"no run {run_id!r} in {where}", hint=f"Runs there: {known}")


def _open_store(store: Any, run_id: str | None) -> RunView:
    """A run from the store: its own rows, so classification columns come along."""
    from tracekit.dashboards.run_figures import tree_order  # pandas only, plotly is loaded

    if run_id is None:
        listed = store.runs(limit=6)
        if len(listed) != 1:
            raise TracekitError(
                f"{store.path} holds {'no' if listed.empty else 'several'} runs: name one",
                hint="store.runs() lists them; open_run(store, run_id)",
            )
        run_id = str(listed["run_id"].iloc[0])
    tree = store.tree(run_id)  # raises StoreError, naming the store, if there is no such run
    row = store.sql("SELECT * FROM runs WHERE run_id = ?", [run_id]).iloc[0]
    frame = tree_order(store.invocations(run_id)).drop(columns="row")
    # DuckDB gives a list column as arrays and NA; a file frame has lists and None.
    frame["chain"] = [_chain(value) for value in frame["chain"]]
    return RunView(
        run_id=run_id,
        agent=_value(row.get("agent")),
        status=_value(row.get("outcome")) or _value(row.get("status")),
        duration_ms=_value(row.get("duration_ms")) if row.get("has_end") else None,
        tree=tree,
        invocations=frame,
    )
