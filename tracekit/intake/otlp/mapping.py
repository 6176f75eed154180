"""Whole traces to records: every span of them becomes an agent, a step, a wrapper, or a reject.

:func:`map_traces` is the processor of the intake pipeline for OTLP: the
assembler hands it the spans of whole traces; it refuses the spans of a loop
of parent links, makes the top span of a trace with no agent span a root run
(nothing read is dropped for want of an agent), indexes who is under whom
(:class:`~tracekit.intake.otlp.spans.SpanIndex`), turns the rest into steps
(:class:`~tracekit.intake.otlp.steps.Steps`), surfaces an error folded into
a step, finds why each agent failed (:mod:`tracekit.intake.otlp.errors`) and
how a run stopped where its root does not say it (:mod:`tracekit.intake.otlp.stops`),
and writes each agent span's records (:mod:`tracekit.intake.otlp.records`).
Where each span went is counted (:class:`~tracekit.intake.otlp.counts.SpanCounts`).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> agent = Span("t", "a", "", "invoke_agent triage", 1_000_000, 5_000_000,
    ...     {"gen_ai.operation.name": "invoke_agent"}, False, "", None)
    >>> step = Span("t", "b", "a", "lookup", 2_000_000, 3_000_000, {}, False, "", None)
    >>> counts = SpanCounts()
    >>> pairs = map_traces({("t", "a"): agent, ("t", "b"): step}, [], counts, 1)
    >>> [type(event).__name__ for _, event in pairs], counts.line()
    (['RunStart', 'Node', 'RunEnd'], '2 spans read = 1 agent + 1 step + 0 wrappers + 0 rejected')
"""

from __future__ import annotations

from typing import Final

import msgspec

from tracekit.events import ErrorInfo, Event, Node
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import apply_dialect
from tracekit.intake.otlp.errors import agent_errors
from tracekit.intake.otlp.evidence import infer
from tracekit.intake.otlp.kinds import tool_name
from tracekit.intake.otlp.loops import loop_agents
from tracekit.intake.otlp.records import agent_records, pair_sort_key, sessions
from tracekit.intake.otlp.spans import Key, SpanIndex, parent_loops
from tracekit.intake.otlp.steps import Steps, own_error
from tracekit.intake.otlp.stops import run_stops

__all__ = ["Reject", "map_traces"]

_NS_PER_MS: Final = 1_000_000
#: A span the mapping refused: its line, a short text naming it, and the reason.
Reject = tuple[int, str, str]
_Pairs = list[tuple[int, Event]]


def map_traces(
    spans: dict[Key, Span], rejects: list[Reject], counts: SpanCounts, traces: int
) -> _Pairs:
    """The records of whole traces with their spans' lines, sorted; ``counts`` says where spans went.

    The spans of a loop of parent links are taken out of ``spans`` and added
    to ``rejects``; the other spans are mapped as if those were missing. A
    trace with no agent span is a run of its own, its top span the root.
    ``traces`` is how many traces ``spans`` holds.
    """
    counts.refused += _refuse_loops(spans, rejects)
    index = SpanIndex(spans)
    if len({key[0] for key in index.agent_set}) < traces and _no_agent(spans, index, counts):
        index = SpanIndex(spans)
    steps = Steps(index)
    pairs: _Pairs = []
    failed_tools = _steps(index, steps, counts, pairs)
    errors = agent_errors(index, failed_tools)
    found = sessions(index)
    stops = run_stops(index, errors)
    for key in index.agents:
        line = spans[key].line
        for event in agent_records(index, key, errors, steps.usage.get(key), found, stops):
            pairs.append((line, event))
    pairs.sort(key=pair_sort_key)
    return pairs


def _steps(index: SpanIndex, steps: Steps, counts: SpanCounts, pairs: _Pairs) -> dict[Key, Node]:
    """Add each step's record to ``pairs``; each agent's last failed tool call."""
    failed_tools: dict[Key, Node] = {}
    made: dict[Key, int] = {}  # step span -> its record's place in pairs
    hidden: list[Key] = []  # folded spans that may have failed
    counts.agents += len(index.agent_set)
    counts.steps += len(index.consumed)
    for key, span in index.spans.items():
        if key in index.agent_set or key in index.consumed:
            continue
        run = index.run_of(key)
        if run is None:
            if _orphan_error(index, key, span, pairs):
                counts.steps += 1
            else:
                counts.outside += 1
            continue
        node = steps.node(key, span, run)
        if node is None:
            counts.wrappers += 1
            if span.error or span.exception is not None:
                hidden.append(key)
            continue
        counts.steps += 1
        made[key] = len(pairs)
        pairs.append((span.line, node))
        owner = index.otel.get(key)
        if node.call == "tool" and node.error is not None and owner is not None:
            last = failed_tools.get(owner)
            if last is None or node.ts >= last.ts:
                failed_tools[owner] = node
    if hidden:
        kept = _surface_errors(index, hidden, made, pairs)
        counts.wrappers -= kept
        counts.steps += kept
    return failed_tools


def _surface_errors(
    index: SpanIndex, hidden: list[Key], made: dict[Key, int], pairs: _Pairs
) -> int:
    """A failed span folded into a step fails that step: an error never vanishes.

    The step keeps its own error if it has one; otherwise it takes the first
    failure folded into it (a tool call that raised inside a delegation tool,
    a query that failed inside a plain step). A plain step takes the error's
    code only from a tool call: the innermost failed span is the step that
    failed, and its type is the origin code. A failed span folded straight
    into its agent (a code agent's ``Step N``) becomes a failed step of that
    agent, named after it, with its error. Returns how many spans became steps.
    """
    into_agent: dict[Key, tuple[Key, ErrorInfo]] = {}  # agent -> its first such span
    for key in hidden:
        error = own_error(index.spans[key])
        above = index.parent_of(key)
        while error is not None and above is not None and above not in made:
            if above in index.agent_set:
                first = into_agent.get(above)
                if first is None or index.spans[key].start < index.spans[first[0]].start:
                    into_agent[above] = (key, error)
                above = None
                break
            above = index.parent_of(above)
        if error is None or above is None:
            continue
        line, node = pairs[made[above]]
        if not isinstance(node, Node) or node.error is not None:
            continue
        # The innermost failed span is where it failed: a step (even a plain one that
        # failed with no code of its own) carries the error of a tool call that raised
        # inside it, whose type is the origin's code.
        span = index.spans[key]
        typed = tool_name(span) is not None and (span.exception or span.attrs.get("error.type"))
        if node.ok is not False or (typed and node.call is None):
            carried = error if node.call is not None or typed else None
            pairs[made[above]] = (line, msgspec.structs.replace(node, ok=False, error=carried))
    return _unshown(index, into_agent, made, pairs)


def _unshown(
    index: SpanIndex, into_agent: dict[Key, tuple[Key, ErrorInfo]], made: dict[Key, int],
    pairs: _Pairs,
) -> int:  # fmt: skip
    """Failures folded into an agent that nothing else shows: its first, as a failed step.

    An agent that failed, has a failed step or a callee that failed already
    shows the failure (a tool that raised, a wrapper that only carried a
    callee's error up).
    """
    if not into_agent:
        return 0
    shown = {
        index.otel.get(key)
        for key, at in made.items()
        if isinstance(pairs[at][1], Node) and pairs[at][1].ok is False  # type: ignore[union-attr]
    }
    kept = 0
    for agent, (key, error) in into_agent.items():
        if agent in shown or own_error(index.spans[agent]) is not None:
            continue
        callees = index.children_agents.get(agent, ())
        if any(own_error(index.spans[callee]) is not None for callee in callees):
            continue
        pairs.append(_failed_step(index, key, agent, error))
        kept += 1
    return kept


def _failed_step(index: SpanIndex, key: Key, agent: Key, error: ErrorInfo) -> tuple[int, Event]:
    """A failed span as a failed step of ``agent``, its error named."""
    span = index.spans[key]
    node = Node(
        ts=span.start / _NS_PER_MS,
        service=span.service,
        traceId=span.trace or None,
        runId=index.run_id(agent),
        id=span.name or span.id,
        ok=False,
        durationMs=(span.end - span.start) / _NS_PER_MS if span.end is not None else None,
        error=error,
    )
    return span.line, node


def _orphan_error(index: SpanIndex, key: Key, span: Span, pairs: _Pairs) -> bool:
    """A failed span whose agent's span never arrived counts under the nearest known agent.

    The instrumentation may drop an agent's span and keep its steps (a
    managed agent whose model raised): the failure is still the
    run's. Its nearest known agent is the innermost agent span of its trace
    whose time holds it. Whether it was kept.
    """
    error = own_error(span) if span.error or span.exception is not None else None
    if error is None:
        return False
    holders = [
        agent
        for agent in index.agents
        if agent[0] == key[0]
        and index.spans[agent].start <= span.start
        and (index.spans[agent].end or span.start) >= (span.end or span.start)
    ]
    if not holders:
        return False
    nearest = max(holders, key=lambda a: (index.spans[a].start, a))
    pairs.append(_failed_step(index, key, nearest, error))
    return True


def _no_agent(spans: dict[Key, Span], index: SpanIndex, counts: SpanCounts) -> bool:
    """Read the traces with no agent span by evidence, in order; whether any span changed.

    First what their attributes show in any namespace (:func:`.evidence.infer`),
    then the loop rule (:func:`.loops.loop_agents`); a trace still without an
    agent is a run of plain steps (:func:`_plain_roots`), counted so that the
    report says so. A message runtime's own traces (no agent, but linked to
    traces that have one) are the plumbing of those runs, not runs.
    """
    with_agents = {key[0] for key in index.agent_set}
    linked = _linked_traces(spans) if with_agents else set()
    missing = {key[0] for key in spans} - with_agents - linked
    if not missing:
        return False
    found = infer(span for key, span in spans.items() if key[0] in missing)
    if found is not None:
        apply_dialect(spans, found.dialect, missing)
        agents = SpanIndex({k: s for k, s in spans.items() if k[0] in missing}).agent_set
        read = {key[0] for key in agents}
        if read:
            counts.inferred[found.line()] = counts.inferred.get(found.line(), 0) + len(read)
        missing -= read
    missing -= loop_agents(spans, missing)
    counts.plain += len(missing)
    _plain_roots(spans, missing)
    return True


def _plain_roots(spans: dict[Key, Span], traces: set[str]) -> None:
    """Make the top span of each of ``traces`` a root run.

    Such a trace (a framework tracekit has no shape for, plain OpenTelemetry)
    is still a run, named after its top span's service and name, with its
    spans as steps: nothing read is dropped for want of an agent.
    """
    for key, span in spans.items():
        if key[0] not in traces:
            continue
        if span.parent and (key[0], span.parent) in spans:
            continue
        name = f"{span.service} {span.name}" if span.service else span.name
        span.attrs = {**span.attrs, "tracekit.root": True, "gen_ai.agent.name": name or span.id}


def _linked_traces(spans: dict[Key, Span]) -> set[str]:
    """The traces that a span link joins to another trace (either end)."""
    linked: set[str] = set()
    for span in spans.values():
        for trace, _ in span.links:
            if trace != span.trace:
                linked.update((trace, span.trace))
    return linked


_CIRCLE: Final = " -> "


def _refuse_loops(spans: dict[Key, Span], rejects: list[Reject]) -> int:
    """Move the spans of each loop of parent links from ``spans`` to ``rejects``; how many."""
    refused = 0
    for loop in parent_loops(spans):
        refused += len(loop)
        ids = [key[1] for key in loop]
        circle = _CIRCLE.join([*ids, ids[0]])
        for key in loop:
            span = spans.pop(key)
            text = msgspec.json.encode(
                {"traceId": span.trace, "spanId": span.id, "parentSpanId": span.parent}
            ).decode()
            rejects.append((span.line, text, f"span {span.id}: its parent links loop ({circle})"))
    return refused
