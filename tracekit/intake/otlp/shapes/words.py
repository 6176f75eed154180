"""The attribute names and values the built-in shapes hand the generic rules: tables, no code.

The kind tests (:mod:`tracekit.intake.otlp.kinds`) read a span-kind
attribute, the agent verdicts of span-kind values, and the keys the
decoders keep; which instrumentation writes each is said here, once.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AGENT_KIND",
    "AGENT_KIND_VALUES",
    "KEPT_KEYS",
    "MODEL_KINDS",
    "SPAN_KIND",
    "TOOL_KIND",
]

#: OpenInference's span kind: on every span it writes.
SPAN_KIND: Final = "openinference.span.kind"
#: Its values: an agent (or an internal step, or a run's root), a tool call, a model call.
AGENT_KIND: Final = "AGENT"
TOOL_KIND: Final = "TOOL"
MODEL_KINDS: Final = frozenset({"LLM", "EMBEDDING"})
#: Other span-kind attributes whose value marks an agent (OpenLLMetry's).
AGENT_KIND_VALUES: Final = (("traceloop.span.kind", "agent"),)
#: The attributes the decoders keep for the shapes, besides the GenAI conventions'.
KEPT_KEYS: Final = frozenset(
    {
        SPAN_KIND,
        "traceloop.span.kind",
        "smolagents.max_steps",  # tells smolagents' agent runs (shapes/smolagents.py)
        "metadata",  # LangChain's run metadata: LangGraph's nodes (shapes/langgraph.py)
        "graph.node.id",
        "graph.node.parent_id",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.model_name",
    }
)
