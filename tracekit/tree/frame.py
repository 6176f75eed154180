"""Invocations as a pandas DataFrame, straight from a trace's records (no store).

:func:`invocations_frame` and :func:`read_invocations` give one row per agent
invocation in the columns of ``Store.invocations()`` (:data:`INVOCATION_COLUMNS`,
documented in ``docs/notebooks.md``), so code written against one works on the
other.

Example:
    >>> frame = read_invocations("sample_traces/child_failure.jsonl")
    >>> frame[["agent", "status", "depth", "error_code"]]
         agent status  depth    error_code
    0  billing  error      1  AGENT_FAILED
    1  refunds  error      2  AGENT_FAILED
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import pandas as pd

from tracekit.events import Enter, Event, Exit
from tracekit.intake import read_trace
from tracekit.tree.build import build_forest
from tracekit.tree.measures import measure
from tracekit.tree.model import AgentStep, Step

__all__ = ["INVOCATION_COLUMNS", "invocations_frame", "read_invocations"]

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
    "edge_source",  # the rule a reader used to find the parent (None: the runtime knew it)
    "own_ms",  # duration_ms less the time its child invocations cover (overlaps once)
    "input_tokens",  # its own model input tokens (from the exit's usage)
    "output_tokens",  # its own model output tokens
    "total_input_tokens",  # own plus every invocation below it
    "total_output_tokens",
    "models",  # the models it used itself, as a list
)


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
    forest = build_forest(records)
    measure(run.steps for run in forest.runs)
    rows = [
        _row(step, parent, depth, run.runId, origins)
        for run in forest.runs
        for step, parent, depth in _invocations(run.steps)
    ]
    return _frame(rows)


def read_invocations(path: str | Path) -> pd.DataFrame:
    """Read a trace file and return :func:`invocations_frame` of its records.

    Bad lines are skipped, as ``tracekit tree`` skips them.

    Example:
        >>> frame = read_invocations("sample_traces/agent_orchestrator.jsonl")
        >>> frame[["agent", "kind", "status", "depth"]]
          agent      kind status  depth
        0   sql  delegate     ok      1
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
        **_measures(step),
    }


def _measures(step: AgentStep) -> dict[str, Any]:
    own, total = step.usage, step.totalUsage
    return {
        "edge_source": step.edge.source if step.edge is not None else None,
        "own_ms": step.ownMs,
        "input_tokens": own.inputTokens if own is not None else None,
        "output_tokens": own.outputTokens if own is not None else None,
        "total_input_tokens": total.inputTokens if total is not None else None,
        "total_output_tokens": total.outputTokens if total is not None else None,
        "models": list(own.models) if own is not None and own.models else None,
    }


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[c for c in INVOCATION_COLUMNS if not c.endswith("_at")])
    for column in ("start_ms", "end_ms", "duration_ms", "own_ms"):
        frame[column] = frame[column].astype("float64")
    for column in ("input_tokens", "output_tokens", "total_input_tokens", "total_output_tokens"):
        frame[column] = frame[column].astype("Int64")
    frame["depth"] = frame["depth"].astype("int64")
    frame["ok"] = frame["ok"].astype("boolean")
    frame["start_at"] = pd.to_datetime(frame["start_ms"], unit="ms")
    frame["end_at"] = pd.to_datetime(frame["end_ms"], unit="ms")
    return frame[list(INVOCATION_COLUMNS)]
