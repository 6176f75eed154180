"""What one span is, by the shape each framework gives it: agent, run, tool, model call.

A span kind alone does not say it: an instrumentation may mark a workflow's
root as an agent (it is the run), or name kinds after run names (an agent as
a chain, an internal step as an agent). So the kinds here read a dialect's
verdict first (:mod:`tracekit.intake.otlp.dialects`), then the GenAI
operation, then the span-kind attribute and the shapes' own verdicts
(:mod:`tracekit.intake.otlp.shapes`, whose tables name the instrumentations);
a graph framework's agents are found per trace, from its structure
(:func:`tracekit.intake.otlp.shapes.graph_shapes`).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "", "execute_tool lookup", 1, 2,
    ...     {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}, False, "", None)
    >>> is_tool(span), tool_name(span), is_llm(span)
    (True, 'lookup', False)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from tracekit.events import Usage
from tracekit.intake.otlp import shapes
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import KIND
from tracekit.intake.otlp.shapes.words import AGENT_KIND, MODEL_KINDS, SPAN_KIND, TOOL_KIND

__all__ = [
    "is_container",
    "is_llm",
    "is_tool",
    "is_workflow",
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


def is_workflow(span: Span) -> bool:
    """A span that is a whole multi-agent run rather than one agent.

    A dialect's ``workflow``, the GenAI ``invoke_workflow``, ``invoke_swarm``
    and ``invoke_graph`` operations, and a root span of the ``AGENT`` kind
    that names no agent (a workflow's trace root). A graph framework's
    workflows are found per trace (:func:`tracekit.intake.otlp.shapes.graph_shapes`).
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
    kind = attrs.get(SPAN_KIND)
    if kind == AGENT_KIND and not span.parent and "graph.node.id" not in attrs:
        return "gen_ai.agent.name" not in attrs and "agent.name" not in attrs
    return False


def tool_name(span: Span) -> str | None:
    """The tool a span calls: ``gen_ai.tool.name``, ``tool.name``, else a tool span's name.

    Example:
        >>> from tracekit.intake.otlp.decode_json import Span
        >>> tool_name(Span("t", "a", "", "handoff to billing", 1, 2,
        ...     {SPAN_KIND: "TOOL"}, False, "", None))
        'handoff to billing'
    """
    attrs = span.attrs
    declared = attrs.get(KIND)
    if declared is not None and declared != "tool":
        return None  # a dialect said what it is, and it is no tool call
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    if name == _MERGED:
        return None  # a span after parallel tools (a merged result): not a call of its own
    if name:
        return str(name)
    if (
        declared == "tool"
        or attrs.get("gen_ai.operation.name") == "execute_tool"
        or attrs.get(SPAN_KIND) == TOOL_KIND
        or "to_agent" in attrs
    ):
        return span.name.removeprefix("execute_tool ").strip() or span.name
    return None


def is_tool(span: Span) -> bool:
    """A tool call: ``execute_tool``, a tool name, a ``TOOL`` span kind or a handoff span."""
    return tool_name(span) is not None


def is_llm(span: Span) -> bool:
    """A model call: a GenAI chat/completion operation, or an ``LLM`` span kind."""
    attrs = span.attrs
    if KIND in attrs:
        return attrs[KIND] == "model"
    operation = attrs.get("gen_ai.operation.name")
    if operation in _LLM_OPERATIONS:
        return True
    if attrs.get(SPAN_KIND) in MODEL_KINDS:
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
    kind = span.attrs.get(SPAN_KIND)
    if kind is not None and kind not in (TOOL_KIND, *MODEL_KINDS):
        return True  # CHAIN, AGENT (an internal step), RETRIEVER ...: a span kind's wrappers
    if "messaging.operation" in span.attrs:
        return True  # a message runtime's plumbing (its create/publish/process spans)
    name = span.name
    if span.attrs.get("gen_ai.tool.name") == _MERGED:
        return True
    if name in _CONTAINER_NAMES or name.startswith(_CONTAINER_PREFIXES):
        return True
    return span.attrs.get("gen_ai.operation.name") in _WORKFLOW_OPERATIONS


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, infinite
        return None
    return number if number >= 0 else None


def usage_of(span: Span) -> Usage | None:
    """A span's model usage: GenAI ``gen_ai.usage.*`` or ``llm.token_count.*``.

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
