"""Who called whom: the edge of each agent span, found by a small ordered tuple of rules.

In most frameworks the agent that receives a handoff is **not** an OTel child
of the agent that handed off: the runner ends one agent's span and opens the
next one's beside it, under the workflow. The edge has to be rebuilt from
other evidence. Each rule below reads one kind of evidence, for the
framework shapes its docstring names, and returns an :class:`Edge` (the
calling agent span, the tool span between the two, the kind) or None;
:data:`EDGE_RULES` lists them in the order they are tried and the first
finding wins, as sqlglot's optimizer lists its rules. The plain OTel parent
is the last rule: it always answers, so it is the fallback.

A rule's finding that agrees with the OTel parent is the OTel parent's
(``source="otel.parent"``): evidence that only confirms the span tree
changes nothing, so a trace whose edges are all OTel parents maps as it did
before the rules existed. Agents are visited in start order, and a rule may
only name a caller that started earlier, so the edges never loop.

Example:
    >>> [rule.__name__ for rule in EDGE_RULES][-1]
    'otel_parent'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from tracekit.events import Kind
from tracekit.intake.otlp import shapes
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import tables
from tracekit.intake.otlp.handoff import is_transfer_name, kind_of_name
from tracekit.intake.otlp.kinds import tool_name
from tracekit.intake.otlp.links import linked_caller
from tracekit.intake.otlp.markers import (
    caller_marker,
    enclosing_tool,
    latest_marker,
    named_marker,
)

if TYPE_CHECKING:  # the index calls the rules; the rules read the index
    from tracekit.intake.otlp.index_view import IndexView, Key

__all__ = [
    "EDGE_RULES",
    "Edge",
    "EdgeRule",
    "gen_ai_caller",
    "gen_ai_transfer",
    "graph_namespace",
    "graph_node_parent",
    "graph_step",
    "handoff_span",
    "kind_of_node",
    "otel_parent",
    "span_link",
    "tool_window",
]

Source: TypeAlias = Literal[
    "otel.parent",
    "span.link",
    "gen_ai.transfer",
    "gen_ai.caller",
    "handoff.span",
    "graph.node.parent_id",
    "graph.namespace",
    "graph.step",
    "tool.window",
]
OTEL: Final = "otel.parent"


@dataclass(frozen=True, slots=True)
class Edge:
    """How an agent span was called.

    Attributes:
        parent: the calling agent (or workflow) span; None for a root.
        node: the tool span between caller and callee, if any.
        kind: ``handoff`` (control passed on) or ``delegate`` (it returns).
        source: the rule that found it.
    """

    parent: Key | None
    node: Key | None
    kind: Kind
    source: Source


EdgeRule: TypeAlias = Callable[["IndexView", "Key"], "Edge | None"]


def kind_of_node(span: Span | None) -> Kind:
    """The kind a delegating tool span means.

    ``gen_ai.transfer.mode = pass_control``, a handoff span (``to_agent``,
    a ``handoff`` operation) or a handoff tool name (``transfer_to_*``, ``handoff*``) is a handoff; a
    ``spawn*`` tool starts a subagent; anything else (``return_to_caller``,
    an agent used as a tool) is a delegation.

    Example:
        >>> kind_of_node(None)
        'delegate'
    """
    if span is None:
        return "delegate"
    mode = span.attrs.get("gen_ai.transfer.mode")
    if mode is not None:
        return "handoff" if mode == "pass_control" else "delegate"
    if "to_agent" in span.attrs or span.attrs.get("gen_ai.operation.name") == "handoff":
        return "handoff"
    return kind_of_name(tool_name(span) or span.name)


def _handoff(index: IndexView, key: Key, marker: Key, source: Source) -> Edge | None:
    """An edge from the agent that owns ``marker`` (a handoff or transfer span) to ``key``."""
    parent = index.otel_agent(marker)
    if parent is None or parent == key or not index.may_call(parent, key):
        return None
    span = index.spans[marker]
    mode = span.attrs.get("gen_ai.transfer.mode")
    if mode is not None or "to_agent" in span.attrs:
        kind: Kind = "delegate" if mode == "return_to_caller" else "handoff"
    else:  # a delegation tool (``delegate_task_to_member``) returns to its caller
        kind = kind_of_node(span)
    return Edge(parent, marker, kind, source)


def span_link(index: IndexView, key: Key) -> Edge | None:
    """A span link to the caller's side (message runtimes, workflow executors, remote agents).

    Runtimes that start the callee in a new trace, or under its own server
    span, join the two sides with a link from the callee's agent span to the
    caller's tool (or agent) span. The caller is the agent that span belongs to.
    A link on a non-agent span above the agent (a runtime's message span) is
    followed too, across traces (:func:`_runtime_link`).
    """
    for link in index.spans[key].links:
        if link not in index.spans or link == key:
            continue
        parent = link if link in index.agent_set else index.otel_agent(link)
        if parent is None or parent == key or not index.may_call(parent, key):
            continue
        node = link if link not in index.agent_set and tool_name(index.spans[link]) else None
        kind = kind_of_node(index.spans[node]) if node else "delegate"
        return Edge(parent, node, kind, "span.link")
    return _runtime_link(index, key)


def _runtime_link(index: IndexView, key: Key) -> Edge | None:
    """A link on a non-agent span above the agent (a message runtime's), followed to its agent.

    The caller's handoff span naming this agent (a ``transfer_to_X`` tool),
    if it has one, is the node. A caller that had ended before this agent
    started handed the conversation on (a handoff, a group chat's next
    speaker, a sequential workflow's next step); one still running waits for
    it (a delegation).
    """
    found = linked_caller(index, key)
    if found is None:
        return None
    parent = found[0]
    if parent == key or not index.may_call(parent, key):
        return None
    node = caller_marker(index, parent, key)
    if node is not None:
        return Edge(parent, node, kind_of_node(index.spans[node]), "span.link")
    caller, callee = index.spans[parent], index.spans[key]
    ended = caller.end is not None and caller.end <= callee.start
    return Edge(parent, None, "handoff" if ended else "delegate", "span.link")


def gen_ai_transfer(index: IndexView, key: Key) -> Edge | None:
    """A GenAI transfer span naming this agent (``gen_ai.transfer.target.name``).

    The GenAI conventions write a transfer as an ``execute_tool`` span with
    ``gen_ai.transfer.mode`` (``pass_control``: a handoff; ``return_to_caller``:
    a delegation) and the target's name; the target need not be its child.
    """
    marker = latest_marker(index, key, lambda span: "gen_ai.transfer.target.name" in span.attrs)
    return _handoff(index, key, marker, "gen_ai.transfer") if marker is not None else None


def gen_ai_caller(index: IndexView, key: Key) -> Edge | None:
    """A remote agent's ``gen_ai.caller.name``: the caller running when it started.

    A remote (CLIENT/SERVER) agent call may carry no parent the reader has;
    the callee names its caller, which must have been running at its start.
    The node is the caller's tool span open at that moment, if any.
    """
    attrs = index.spans[key].attrs
    name = attrs.get("gen_ai.caller.name") or attrs.get("gen_ai.caller.agent.name")
    if not name:
        return None
    start = index.spans[key].start
    parent = index.running_agent(key, str(name), start)
    if parent is None:
        return None
    node = index.open_tool(parent, start)
    kind = kind_of_node(index.spans[node]) if node else "delegate"
    return Edge(parent, node, kind, "gen_ai.caller")


def handoff_span(index: IndexView, key: Key) -> Edge | None:
    """A handoff span in the agent that was speaking: its parent, kind ``handoff``.

    Serves a ``handoff`` span (``from_agent``/``to_agent``, or a ``TOOL``
    span named ``handoff to X``), a generic transfer tool
    (``execute_tool transfer_to_agent``, the target in the tool's arguments),
    a swarm's ``handoff_to_agent`` (the target in span events), a workflow's
    ``handoff`` tool (``to_agent`` in the input's ``kwargs``), graph handoff
    tools (``transfer_to_<name>``) and any dialect's goto or transfer
    markers (:mod:`tracekit.intake.otlp.dialects`): the
    runner ends or leaves the speaking agent and opens the target beside it.
    The latest such span naming this agent (or naming none) before it started
    is the handoff.
    """
    marker = latest_marker(index, key, _is_handoff_marker)
    return _handoff(index, key, marker, "handoff.span") if marker is not None else None


def _is_handoff_marker(span: Span) -> bool:
    if "to_agent" in span.attrs:
        return True
    name = tool_name(span)
    return name is not None and is_transfer_name(name)


def graph_node_parent(index: IndexView, key: Key) -> Edge | None:
    """``graph.node.parent_id``: the agent that handed off, by name.

    A tracing processor may write the name of the agent that handed off on
    the target's agent span. The caller is the
    latest agent of that name that started before it.
    """
    name = index.spans[key].attrs.get("graph.node.parent_id")
    if not name:
        return None
    parent = index.latest_agent(key, str(name))
    if parent is None:
        return None
    return Edge(parent, None, "handoff", "graph.node.parent_id")


def graph_namespace(index: IndexView, key: Key) -> Edge | None:
    """A graph framework's checkpoint namespaces (:func:`~tracekit.intake.otlp.shapes.namespace`).

    A subgraph agent runs in the namespace ``caller:1|agent:2``: its caller
    is the agent whose namespace is that path less its last part, or the
    graph's run at the top. The span tree agrees unless a context was lost
    (threads, callbacks run outside the graph's context).
    """
    meta = shapes.graph_meta(index.spans[key])
    if meta is None or shapes.graph_node(meta) is None:
        return None
    above = shapes.namespace(meta).rpartition("|")[0]
    parent = index.namespace_agent(key, above)
    if parent is None or not index.may_call(parent, key):
        return None
    return Edge(parent, index.node_between(parent, key), "delegate", "graph.namespace")


def graph_step(index: IndexView, key: Key) -> Edge | None:
    """A graph framework's step order: the agent node that ran the step before this one.

    A supervisor's worker may hand control back with no tool at all (a pair
    of scripted messages and a graph edge back to the supervisor), so
    nothing but the graph's step (:func:`~tracekit.intake.otlp.shapes.graph_step`)
    says who passed it on: the
    agent node of the same parent graph with the latest earlier step, which
    had ended when this one started. Tried after the handoff spans, which
    name their target.
    """
    step = _step(index.spans[key])
    workflow = index.otel_agent(key)
    if step is None or workflow is None or workflow not in index.workflows:
        return None
    start = index.spans[key].start
    best: tuple[int, int, Key] | None = None
    for other in index.agent_set:
        span = index.spans[other]
        if other == key or other[0] != key[0] or index.otel_agent(other) != workflow:
            continue
        before = _step(span)
        if before is None or before >= step or span.end is None or span.end > start:
            continue
        if best is None or (before, span.start) > best[:2]:
            best = (before, span.start, other)
    if best is None or not index.may_call(best[2], key):
        return None
    return Edge(best[2], None, "handoff", "graph.step")


def _step(span: Span) -> int | None:
    """A node run's step: in the graph's metadata, else in an attribute a dialect declares."""
    found = shapes.graph_step(shapes.graph_meta(span))
    if found is not None:
        return found
    for name in tables().step_from:
        value = span.attrs.get(name)
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            return int(value)
    return None


def tool_window(index: IndexView, key: Key) -> Edge | None:
    """An agent opened beside its caller, inside the caller's tool call: a delegate through it.

    A runner may open an agent called from a tool (``as_tool``) under the run,
    not under the tool span: the span tree puts a run, not an agent, above
    it. A tool call of another agent of the same run that was open for this
    agent's whole run is the node: of several, the one whose name holds the
    agent's name, else the first to start (concurrent tool calls start their
    agents in the order they were made, and each serves one).
    """
    run = index.otel_agent(key)
    span = index.spans[key]
    if run is None or run not in index.workflows or span.end is None:
        return None
    name = index.agent_name(span).lower()
    best: tuple[bool, int, Key, Key] | None = None
    for caller in index.agent_set:
        if caller[0] != key[0] or caller == key or index.otel_agent(caller) != run:
            continue
        for tool in index.tools_of(caller):
            found = index.spans[tool]
            if tool in index.claimed or found.start > span.start:
                continue
            if found.end is not None and found.end < span.end:
                continue
            rank = (name not in (tool_name(found) or "").lower(), found.start, tool, caller)
            if best is None or rank < best:
                best = rank
    if best is None or not index.may_call(best[3], key):
        return None
    return Edge(best[3], best[2], "delegate", "tool.window")


def otel_parent(index: IndexView, key: Key) -> Edge | None:
    """The plain OTel parent: the nearest agent span above, through the tool span between.

    Serves every shape where a callee nests under its caller: a delegation
    inside a tool, agents used as tools, tracekit's own SDK. When no tool span lies
    between them, a tool span of the caller that encloses the callee in time
    and names it (a team's ``delegate_task_to_member``, whose member runs beside
    it) is the node, else the caller's latest one before it that names it (a
    delegation tool that returned before its member ran).
    """
    parent = index.otel_agent(key)
    node = (
        index.node_between(parent, key)
        or enclosing_tool(index, parent, key)
        or named_marker(index, parent, key)
    )
    return Edge(parent, node, kind_of_node(index.spans[node]) if node else "delegate", OTEL)


#: The rules in the order they are tried; the first finding wins.
EDGE_RULES: Final[tuple[EdgeRule, ...]] = (
    span_link,
    gen_ai_transfer,
    gen_ai_caller,
    handoff_span,
    graph_node_parent,
    graph_step,
    graph_namespace,
    tool_window,
    otel_parent,
)
