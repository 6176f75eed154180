"""What one span is, by the shape each framework gives it: agent, run, tool, model call.

A span kind alone does not say it. OpenInference marks the OpenAI Agents
workflow root ``AGENT`` (it is the run, not an agent), and its LangChain
instrumentation names kinds after run names, so a LangGraph agent may be a
``CHAIN`` span and an internal step an ``AGENT`` one. So the kinds here read
the GenAI operation first, then the framework's own marks; LangGraph's
agents (subgraphs) are found per trace, from their checkpoint namespaces
(:func:`langgraph_agents`).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "", "execute_tool lookup", 1, 2,
    ...     {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}, False, "", None)
    >>> is_tool(span), tool_name(span), is_llm(span)
    (True, 'lookup', False)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from tracekit.events import Usage
from tracekit.intake.otlp import shapes
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import KIND

__all__ = [
    "is_container",
    "is_llm",
    "is_tool",
    "is_workflow",
    "langgraph_meta",
    "langgraph_shapes",
    "namespace",
    "session_of",
    "sum_usage",
    "tool_name",
    "usage_of",
]

_WORKFLOW_OPERATIONS: Final = frozenset(
    {"invoke_workflow", "invoke_swarm", "invoke_graph", "workflow"}
)
_WORKFLOW_NAMES: Final = ("invoke_workflow", "invoke_swarm", "invoke_graph")
_LLM_OPERATIONS: Final = frozenset(
    {"chat", "text_completion", "generate_content", "embeddings", "responses"}
)
#: Spans that only hold a model turn or a loop cycle: neither a step nor a node.
_CONTAINER_NAMES: Final = frozenset({"turn", "task", "call_llm", "invocation"})
_CONTAINER_PREFIXES: Final = ("execute_event_loop_cycle", "event_loop", "cycle")
_MERGED: Final = "(merged tools)"
#: A graph's entry and exit nodes only route (langgraph-swarm's ``__start__`` runs
#: ``route_to_active_agent``): they do not make the graph an agent of its own.
_GRAPH_ENDS: Final = frozenset({"__start__", "__end__"})
_OPENINFERENCE_TOOL: Final = "TOOL"
_OPENINFERENCE_LLM: Final = frozenset({"LLM", "EMBEDDING"})


def is_workflow(span: Span) -> bool:
    """A span that is a whole multi-agent run rather than one agent.

    ``invoke_workflow`` (Google ADK), ``invoke_swarm`` / ``invoke_graph``
    (Strands) and the OpenAI Agents trace root under OpenInference (an
    ``AGENT`` span with no parent and no ``graph.node.id``). LangGraph's
    workflows are found per trace (:func:`langgraph_shapes`).
    """
    attrs = span.attrs
    operation = attrs.get("gen_ai.operation.name")
    if KIND in attrs:  # a dialect's verdict (:mod:`.dialects`) comes first
        return attrs[KIND] == "workflow"
    if operation is not None:  # the common case: one look
        return operation in _WORKFLOW_OPERATIONS and "tracekit.invocation_id" not in attrs
    if "tracekit.root" in attrs or "tracekit.invocation_id" in attrs:
        return False
    # A framework's shape overrules the generic rules below (shapes.may_decide, inline).
    if shapes.DECIDER_NAMES[span.name] or not shapes.DECIDER_KEYS.isdisjoint(attrs):
        verdict = shapes.workflow_verdict(span)
        if verdict is not None:
            return verdict
    if span.name.startswith(_WORKFLOW_NAMES):
        return True
    kind = attrs.get("openinference.span.kind")
    if kind == "AGENT" and not span.parent and "graph.node.id" not in attrs:
        return "gen_ai.agent.name" not in attrs and "agent.name" not in attrs
    return False


def tool_name(span: Span) -> str | None:
    """The tool a span calls: ``gen_ai.tool.name``, ``tool.name``, else a tool span's name.

    Example:
        >>> from tracekit.intake.otlp.decode_json import Span
        >>> tool_name(Span("t", "a", "", "handoff to billing", 1, 2,
        ...     {"openinference.span.kind": "TOOL"}, False, "", None))
        'handoff to billing'
    """
    attrs = span.attrs
    declared = attrs.get(KIND)
    if declared is not None and declared != "tool":
        return None  # a dialect said what it is, and it is no tool call
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    if name == _MERGED:
        return None  # ADK's span after parallel tools: not a call of its own
    if name:
        return str(name)
    if (
        declared == "tool"
        or attrs.get("gen_ai.operation.name") == "execute_tool"
        or attrs.get("openinference.span.kind") == _OPENINFERENCE_TOOL
        or "to_agent" in attrs
    ):
        return span.name.removeprefix("execute_tool ").strip() or span.name
    return None


def is_tool(span: Span) -> bool:
    """A tool call: ``execute_tool``, a tool name, an OpenInference ``TOOL`` or a handoff span."""
    return tool_name(span) is not None


def is_llm(span: Span) -> bool:
    """A model call: a GenAI chat/completion operation, or an OpenInference ``LLM`` span."""
    attrs = span.attrs
    if KIND in attrs:
        return attrs[KIND] == "model"
    operation = attrs.get("gen_ai.operation.name")
    if operation in _LLM_OPERATIONS:
        return True
    if attrs.get("openinference.span.kind") in _OPENINFERENCE_LLM:
        return True
    return operation is None and span.name == "call_llm"


def is_container(span: Span) -> bool:
    """A span that only holds others: a model turn, a loop cycle, a chain, a task.

    Its tools and model calls belong to the agent above; it is no step of its own.
    """
    if "tracekit.step" in span.attrs:
        return False
    declared = span.attrs.get(KIND)
    if declared is not None:
        return declared == "wrapper"
    kind = span.attrs.get("openinference.span.kind")
    if kind is not None and kind not in (_OPENINFERENCE_TOOL, *_OPENINFERENCE_LLM):
        return True  # CHAIN, AGENT (an internal step), RETRIEVER ...: OpenInference's wrappers
    if "messaging.operation" in span.attrs:
        return True  # a message runtime's plumbing (AutoGen's create/publish/process spans)
    name = span.name
    if span.attrs.get("gen_ai.tool.name") == _MERGED:
        return True
    if name in _CONTAINER_NAMES or name.startswith(_CONTAINER_PREFIXES):
        return True
    return span.attrs.get("gen_ai.operation.name") in _WORKFLOW_OPERATIONS


def langgraph_meta(span: Span) -> dict[str, Any] | None:
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
    meta = langgraph_meta(span)
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


def langgraph_shapes(spans: dict[Any, Span]) -> tuple[set[Any], set[Any]]:
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


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def usage_of(span: Span) -> Usage | None:
    """A span's model usage: GenAI ``gen_ai.usage.*`` or OpenInference ``llm.token_count.*``.

    Example:
        >>> from tracekit.intake.otlp.decode_json import Span
        >>> usage_of(Span("t", "a", "", "chat", 1, 2, {"gen_ai.usage.input_tokens": 12,
        ...     "gen_ai.usage.output_tokens": 3, "gen_ai.response.model": "m1"}, False, "", None))
        Usage(inputTokens=12, outputTokens=3, models=['m1'])
    """
    attrs = span.attrs
    tokens_in = _int(attrs.get("gen_ai.usage.input_tokens", attrs.get("llm.token_count.prompt")))
    tokens_out = _int(
        attrs.get("gen_ai.usage.output_tokens", attrs.get("llm.token_count.completion"))
    )
    model = (
        attrs.get("gen_ai.response.model")
        or attrs.get("gen_ai.request.model")
        or attrs.get("llm.model_name")
    )
    if tokens_in is None and tokens_out is None and not model:
        return None
    return Usage(
        inputTokens=tokens_in, outputTokens=tokens_out, models=[str(model)] if model else None
    )


def sum_usage(usages: Iterable[Usage]) -> Usage | None:
    """The sum of several usages (models in first-seen order), or None for none.

    Example:
        >>> sum_usage([Usage(inputTokens=2, models=["a"]), Usage(inputTokens=3, outputTokens=1)])
        Usage(inputTokens=5, outputTokens=1, models=['a'])
    """
    tokens_in: int | None = None
    tokens_out: int | None = None
    models: list[str] = []
    seen = False
    for usage in usages:
        seen = True
        if usage.inputTokens is not None:
            tokens_in = (tokens_in or 0) + usage.inputTokens
        if usage.outputTokens is not None:
            tokens_out = (tokens_out or 0) + usage.outputTokens
        for model in usage.models or ():
            if model not in models:
                models.append(model)
    if not seen:
        return None
    return Usage(inputTokens=tokens_in, outputTokens=tokens_out, models=models or None)


def session_of(span: Span) -> str | None:
    """The conversation a span belongs to: ``gen_ai.conversation.id``, else ``session.id``."""
    found = span.attrs.get("gen_ai.conversation.id") or span.attrs.get("session.id")
    return str(found) if found else None
