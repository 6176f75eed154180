"""LlamaIndex AgentWorkflow under OpenInference: no agent span at all, only turns.

``openinference-instrumentation-llama-index`` writes the workflow as one
``AgentWorkflow.run`` CHAIN span (``FunctionAgent.run`` for an agent run
alone) with every step beside the others under it: ``setup_agent``,
``run_agent_step`` (the model calls under it), ``parse_agent_output``,
``call_tool`` (a ``FunctionTool.acall`` TOOL span under it) and
``aggregate_tool_results``, turn after turn. The agent is named only inside
the ``setup_agent`` span's input (``current_agent_name='triage'``, kept by
the decoders, :mod:`tracekit.intake.otlp.inputs`). A handoff is the
workflow's own ``handoff`` tool, whose input names the next agent
(``to_agent``); an agent used as a tool runs its own ``FunctionAgent.run``
workflow under the tool span.

So an invocation is a run of turns of one agent: :func:`invocations` makes
the first ``setup_agent`` span of each run the agent's span (its end moved
to the run's end) and moves the run's other steps under it, so that every
span is still read once (the agent is a span read, as CrewAI's coworkers
are). The ``handoff`` tool span is then a handoff marker in the handing
agent, and the ``handoff_span`` edge rule finds it.

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "a", "r", "AgentWorkflow.setup_agent", 1, 2,
    ...     {"current_agent_name": "billing"}, False, "", None)
    >>> SHAPE.recognise(span), SHAPE.agent_name(span), SHAPE.is_agent(span)
    (True, 'billing', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tracekit.intake.otlp.inputs import CURRENT_AGENT
from tracekit.intake.otlp.shapes.base import Shape

if TYPE_CHECKING:  # the decoders read the shapes' tables
    from tracekit.intake.otlp.decode_json import Span

__all__ = ["SHAPE", "invocations"]

Key = tuple[str, str]
#: The workflow spans of LlamaIndex's agents: each is a whole run.
_RUNNERS: Final = ("AgentWorkflow.", "FunctionAgent.", "ReActAgent.", "CodeActAgent.")
_RUN: Final = ".run"


def _is_runner(name: str) -> bool:
    return name.endswith(_RUN) and name.startswith(_RUNNERS)


def _recognise(span: Span) -> bool:
    return CURRENT_AGENT in span.attrs or _is_runner(span.name)


def _name(span: Span) -> str | None:
    found = span.attrs.get(CURRENT_AGENT)
    return str(found) if found else None


def invocations(spans: dict[Key, Span], turns: list[Key]) -> list[Key]:
    """Group each parent's steps into runs of one agent's turns; the agent span of each run.

    ``turns`` are the ``setup_agent`` spans that name an agent. The spans
    beside a turn (same parent), from it to the next turn of another agent,
    are moved under it; a later turn of the same agent is only a step. Run
    twice, it changes nothing more.
    """
    parents = {(key[0], spans[key].parent) for key in turns}
    siblings: dict[Key, list[Key]] = {parent: [] for parent in parents}
    for key, span in spans.items():
        found = siblings.get((span.trace, span.parent))
        if found is not None:
            found.append(key)
    heads: list[Key] = []
    for keys in siblings.values():
        keys.sort(key=lambda k: (spans[k].start, k))
        heads.extend(_group(spans, keys))
    return heads


def _group(spans: dict[Key, Span], keys: list[Key]) -> list[Key]:
    heads: list[Key] = []
    head: Span | None = None
    for key in keys:
        span = spans[key]
        agent = span.attrs.get(CURRENT_AGENT)
        if agent is not None and (head is None or agent != head.attrs[CURRENT_AGENT]):
            head = span
            heads.append(key)
            continue
        if head is None:
            continue  # before the first turn (``init_run``): the workflow's own step
        if agent is not None:  # a later turn of the same agent: a step of its invocation
            span.attrs = {k: v for k, v in span.attrs.items() if k != CURRENT_AGENT}
        span.parent = head.id
        if head.end is not None and (span.end is None or span.end > head.end):
            head.end = span.end
    return heads


SHAPE: Final = Shape(
    name="llama_index",
    recognise=_recognise,
    agent_name=_name,
    is_agent=lambda span: True if CURRENT_AGENT in span.attrs else None,
    is_workflow=lambda span: True if _is_runner(span.name) else None,
    names=_is_runner,
    keys=frozenset({CURRENT_AGENT}),
    # A workflow's ``max_iterations`` ("Max iterations of 20 reached!").
    limits=("max_iterations", "Max iterations of"),
    # ``early_stopping_method="generate"``: at ``max_iterations`` the output
    # parser asks the model for a last answer; it calls no model otherwise.
    forced_answer=(".parse_agent_output", "max_iterations"),
)
