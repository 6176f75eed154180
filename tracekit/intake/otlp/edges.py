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
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.handoff import is_transfer_name, kind_of_name
from tracekit.intake.otlp.kinds import langgraph_meta, namespace, tool_name

if TYPE_CHECKING:  # the index calls the rules; the rules read the index
    from tracekit.intake.otlp.spans import Key, SpanIndex

__all__ = [
    "EDGE_RULES",
    "Edge",
    "EdgeRule",
    "gen_ai_caller",
    "gen_ai_transfer",
    "graph_node_parent",
    "handoff_span",
    "kind_of_node",
    "langgraph_metadata",
    "otel_parent",
    "span_link",
]

Source: TypeAlias = Literal[
    "otel.parent",
    "span.link",
    "gen_ai.transfer",
    "gen_ai.caller",
    "handoff.span",
    "graph.node.parent_id",
    "langgraph.metadata",
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


EdgeRule: TypeAlias = Callable[["SpanIndex", "Key"], "Edge | None"]


def kind_of_node(span: Span | None) -> Kind:
    """The kind a delegating tool span means.

    ``gen_ai.transfer.mode = pass_control``, a handoff span (``to_agent``)
    or a handoff tool name (``transfer_to_*``, ``handoff*``) is a handoff; a
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
    if "to_agent" in span.attrs:
        return "handoff"
    return kind_of_name(tool_name(span) or span.name)


def _handoff(index: SpanIndex, key: Key, marker: Key, source: Source) -> Edge | None:
    """An edge from the agent that owns ``marker`` (a handoff or transfer span) to ``key``."""
    parent = index.otel_agent(marker)
    if parent is None or parent == key or not index.may_call(parent, key):
        return None
    mode = index.spans[marker].attrs.get("gen_ai.transfer.mode")
    kind: Kind = "delegate" if mode == "return_to_caller" else "handoff"
    return Edge(parent, marker, kind, source)


def span_link(index: SpanIndex, key: Key) -> Edge | None:
    """A span link to the caller's side (Microsoft Agent Framework, remote A2A agents).

    Runtimes that start the callee in a new trace, or under its own server
    span, join the two sides with a link from the callee's agent span to the
    caller's tool (or agent) span. The caller is the agent that span belongs to.
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
    return None


def gen_ai_transfer(index: SpanIndex, key: Key) -> Edge | None:
    """A GenAI transfer span naming this agent (``gen_ai.transfer.target.name``).

    The GenAI conventions write a transfer as an ``execute_tool`` span with
    ``gen_ai.transfer.mode`` (``pass_control``: a handoff; ``return_to_caller``:
    a delegation) and the target's name; the target need not be its child.
    """
    marker = index.latest_marker(key, lambda span: "gen_ai.transfer.target.name" in span.attrs)
    return _handoff(index, key, marker, "gen_ai.transfer") if marker is not None else None


def gen_ai_caller(index: SpanIndex, key: Key) -> Edge | None:
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


def handoff_span(index: SpanIndex, key: Key) -> Edge | None:
    """A handoff span in the agent that was speaking: its parent, kind ``handoff``.

    Serves OpenAI Agents (its ``handoff`` span, ``from_agent``/``to_agent``,
    or under OpenInference a ``TOOL`` span named ``handoff to X``), Google ADK
    (``execute_tool transfer_to_agent``, the target in the tool's arguments),
    Strands swarms (``handoff_to_agent``, the target in span events) and
    LangGraph handoff tools (``transfer_to_<name>``, ``Command.PARENT``): the
    runner ends or leaves the speaking agent and opens the target beside it.
    The latest such span naming this agent (or naming none) before it started
    is the handoff.
    """
    marker = index.latest_marker(key, _is_handoff_marker)
    return _handoff(index, key, marker, "handoff.span") if marker is not None else None


def _is_handoff_marker(span: Span) -> bool:
    if "to_agent" in span.attrs:
        return True
    name = tool_name(span)
    return name is not None and is_transfer_name(name)


def graph_node_parent(index: SpanIndex, key: Key) -> Edge | None:
    """OpenInference's ``graph.node.parent_id``: the agent that handed off, by name.

    The OpenInference processor for OpenAI Agents writes the name of the
    agent that handed off on the target's agent span. The caller is the
    latest agent of that name that started before it.
    """
    name = index.spans[key].attrs.get("graph.node.parent_id")
    if not name:
        return None
    parent = index.latest_agent(key, str(name))
    if parent is None:
        return None
    return Edge(parent, None, "handoff", "graph.node.parent_id")


def langgraph_metadata(index: SpanIndex, key: Key) -> Edge | None:
    """LangGraph's checkpoint namespaces (the JSON ``metadata`` attribute).

    A subgraph agent runs in the namespace ``caller:1|agent:2``: its caller
    is the agent whose namespace is that path less its last part, or the
    graph's run at the top. The span tree agrees unless a context was lost
    (threads, callbacks run outside the graph's context).
    """
    meta = langgraph_meta(index.spans[key])
    if meta is None or "langgraph_node" not in meta:
        return None
    above = namespace(meta).rpartition("|")[0]
    parent = index.namespace_agent(key, above)
    if parent is None or not index.may_call(parent, key):
        return None
    return Edge(parent, index.node_between(parent, key), "delegate", "langgraph.metadata")


def otel_parent(index: SpanIndex, key: Key) -> Edge | None:
    """The plain OTel parent: the nearest agent span above, through the tool span between.

    Serves every shape where a callee nests under its caller: Pydantic AI's
    delegation inside a tool, agents used as tools (OpenAI ``as_tool``, ADK
    ``AgentTool``, Strands), tracekit's own SDK.
    """
    parent = index.otel_agent(key)
    node = index.node_between(parent, key)
    return Edge(parent, node, kind_of_node(index.spans[node]) if node else "delegate", OTEL)


#: The rules in the order they are tried; the first finding wins.
EDGE_RULES: Final[tuple[EdgeRule, ...]] = (
    span_link,
    gen_ai_transfer,
    gen_ai_caller,
    handoff_span,
    graph_node_parent,
    langgraph_metadata,
    otel_parent,
)
