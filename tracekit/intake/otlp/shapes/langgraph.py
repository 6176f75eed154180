"""LangGraph's shape, by the graph's structure: which spans are agents and which are runs.

LangGraph writes, under any instrumentation that keeps LangChain's run
metadata (the JSON ``metadata`` attribute under OpenInference), each node
run with its ``langgraph_node`` and its checkpoint namespace
(``supervisor:1|agent:2``). OpenInference names kinds after run names there
(a ReAct loop's model step is ``agent``, an ``AGENT`` span), so agents and
workflows are found per trace from the structure (:func:`graph_shapes`):
a graph run with node runs under it is an agent, shown by the parent graph's
node that wraps it, unless its own nodes are agents: then it is the workflow
that runs them. The edge rules read :func:`graph_meta` and :func:`namespace`
for the step order and the namespaces (``graph_step``, ``graph_namespace``).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "", "triage", 1, 2,
    ...     {"metadata": '{"langgraph_node": "triage", "langgraph_checkpoint_ns": "triage:1"}'},
    ...     False, "", None)
    >>> namespace(graph_meta(span))
    'triage:1'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span

__all__ = ["META_KEY", "graph_meta", "graph_shapes", "namespace", "node_of_meta", "step_of"]

#: The attribute holding LangChain's run metadata (JSON).
META_KEY: Final = "metadata"
#: A graph's entry and exit nodes only route (langgraph-swarm's ``__start__`` runs
#: ``route_to_active_agent``): they do not make the graph an agent of its own.
_GRAPH_ENDS: Final = frozenset({"__start__", "__end__"})


def node_of_meta(meta: dict[str, Any]) -> str | None:
    """The node a run's metadata says it is (``langgraph_node``), or None."""
    found = meta.get("langgraph_node")
    return str(found) if found is not None else None


def step_of(meta: dict[str, object] | None) -> int | None:
    """A node run's ``langgraph_step`` (the graph's step order), or None."""
    found = meta.get("langgraph_step") if meta else None
    return found if isinstance(found, int) else None


def graph_meta(span: Span) -> dict[str, Any] | None:
    """The LangGraph ``metadata`` attribute (JSON) of a LangChain span, decoded, or None."""
    raw = span.attrs.get("metadata")
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or ("langgraph" not in raw and "checkpoint_ns" not in raw):
        return None
    try:
        found = json.loads(raw)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def namespace(meta: dict[str, Any]) -> str:
    """A LangGraph span's checkpoint namespace (``supervisor:1|agent:2``), or ``""``."""
    found = meta.get("langgraph_checkpoint_ns") or meta.get("checkpoint_ns") or ""
    return str(found)


def _is_graph_node(span: Span) -> bool:
    """A LangGraph node run: its ``langgraph_node`` is its own name."""
    meta = graph_meta(span)
    return meta is not None and meta.get("langgraph_node") == span.name


def _node_of(spans: dict[Any, Span], run: Any) -> Any:
    """The parent graph's node span that stands for a subgraph run, else the run itself.

    The node is the run's parent of the same name, or its grandparent of the same
    name through a function node that calls the subgraph (langgraph-supervisor's
    ``call_agent``, an ``AGENT`` span only by its name).
    """
    span = spans[run]
    cur = (span.trace, span.parent)
    for _ in range(2):
        if cur not in spans:
            return run
        above = spans[cur]
        if above.name == span.name and _is_graph_node(above):
            return cur
        cur = (above.trace, above.parent)
    return run


def graph_shapes(spans: dict[Any, Span]) -> tuple[set[Any], set[Any]]:
    """LangGraph's agents and workflow runs among the spans, by the graph's structure.

    A graph run is a span with node runs right under it (``agent``, ``tools``
    of a ``create_react_agent``; ``triage``, ``billing`` of a parent graph).
    A graph run is an agent, shown by the node that wraps it when it is a
    subgraph (the parent graph's ``triage`` node around the compiled
    ``triage`` graph), unless its own nodes are agents: then it is the
    workflow that runs them. OpenInference's kinds are not used: they follow
    run names (``agent`` is the ReAct loop's model step).

    Returns:
        ``(agents, workflows)``, as keys of ``spans``.
    """
    children: dict[Any, list[Any]] = {}
    for key, span in spans.items():
        if span.parent and "metadata" in span.attrs:
            children.setdefault((span.trace, span.parent), []).append(key)
    runs = {
        parent
        for parent, kids in children.items()
        if parent in spans and any(_is_graph_node(spans[k]) for k in kids)
    }
    agent_of: dict[Any, Any] = {}  # graph run -> the span that stands for it
    for run in runs:
        agent_of[run] = _node_of(spans, run)
    wrappers = set(agent_of.values())
    workflows: set[Any] = set()
    for run in runs:
        nodes = [
            k
            for k in children.get(run, ())
            if _is_graph_node(spans[k]) and spans[k].name not in _GRAPH_ENDS
        ]
        if nodes and all(k in wrappers or k in runs for k in nodes):
            workflows.add(agent_of[run])
    return wrappers - workflows, workflows
