"""smolagents under OpenInference: agents are ``<name>.run`` spans with no agent name.

``openinference-instrumentation-smolagents`` opens one ``AGENT`` span per
``MultiStepAgent.run``, named ``<agent name>.run`` (the class name when the
agent has none), with ``smolagents.*`` attributes and no ``agent.name``; each
step is a ``Step N`` CHAIN span, each tool a TOOL span named after the tool's
class (``tool.name`` is the tool). A managed agent is called with no tool
span: its ``<name>.run`` hangs under the manager's ``Step N``, so the plain
OTel parent is its edge. The root agent is an agent, not a workflow, though
it has no parent and no ``graph.node.id``.

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "", "billing.run", 1, 2,
    ...     {"openinference.span.kind": "AGENT", "smolagents.max_steps": 6}, False, "", None)
    >>> SHAPE.recognise(span), SHAPE.agent_name(span), SHAPE.is_workflow(span)
    (True, 'billing', False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tracekit.intake.otlp.shapes.base import Shape

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span

__all__ = ["SHAPE"]

_RUN: Final = ".run"


def _named(name: str) -> bool:
    return name.endswith(_RUN)


def _recognise(span: Span) -> bool:
    """An agent run span of smolagents: ``<name>.run`` with ``smolagents.*`` attributes."""
    return _named(span.name) and any(key.startswith("smolagents.") for key in span.attrs)


def _name(span: Span) -> str | None:
    return span.name.removesuffix(_RUN) or None


SHAPE: Final = Shape(
    name="smolagents",
    recognise=_recognise,
    agent_name=_name,
    is_agent=lambda span: True,
    is_workflow=lambda span: False,
    names=_named,
    # ``max_steps`` ends a run with AgentMaxStepsError ("Reached max steps.").
    limits=("AgentMaxStepsError", "max_steps", "Reached max steps"),
    # At max_steps the answer is asked of the model without tools: no error anywhere.
    step_budget=("smolagents.max_steps", "Step ", "final_answer"),
)
