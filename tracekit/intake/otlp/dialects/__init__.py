"""The dialects in force, and what they say of each span, written on it for the rules.

The built-in declarations (``shapes/*.toml``) are always known; a user's
(``--dialect FILE``) is put in force for one read with :func:`using`. Before
the span index is built, :func:`apply` reads every span against them once
and writes what they say as evidence the rules read:

- its kind, ``tracekit.dialect.kind`` (``agent``, ``workflow``, ``wrapper``,
  ``tool``, ``model``), and the name it gives (``gen_ai.agent.name``,
  ``gen_ai.tool.name``, ``gen_ai.workflow.name``), for the spans of a trace
  the dialect recognises;
- a handoff marker of any dialect (a goto span, an attribute naming the agent
  handed to) as ``gen_ai.transfer.target.name``, on the tool call that made
  it when there is one;
- an exception type a dialect lists as control flow, as
  ``tracekit.control_flow`` (no failure); a loop refusal, as tracekit's
  ``AGENT_RECURSION``; an error code found where the dialect keeps it, as
  ``error.type``.

The modules: ``force`` (the dialects in force, :func:`using`), ``tables``
(what they say, joined: the keys the decoders keep, the control-flow and
limit types), ``apply`` (a trace's dialect and each span's verdicts),
``claims`` (a span's kind and name), ``faults`` (its error), ``targets``
(handoff markers), ``keys`` (where a verdict is written).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> from tracekit.intake.otlp.dialect import parse_dialect
    >>> mine = parse_dialect('[agents]\\nnames = ["agent:*"]', "tracekit.toml")
    >>> spans = {("t", "a"): Span("t", "a", "", "agent:billing", 1, 2, {}, False, "", None)}
    >>> with using([mine]):
    ...     _ = apply(spans)
    >>> spans["t", "a"].attrs
    {'tracekit.dialect.kind': 'agent', 'gen_ai.agent.name': 'billing'}
"""

from tracekit.intake.otlp.dialects.apply import apply, apply_dialect
from tracekit.intake.otlp.dialects.force import active, builtin, user_dialects, using
from tracekit.intake.otlp.dialects.keys import CONTROL_FLOW_KEY, KIND
from tracekit.intake.otlp.dialects.tables import Tables, is_control_flow, kept_keys, tables

__all__ = [
    "CONTROL_FLOW_KEY",
    "KIND",
    "Tables",
    "active",
    "apply",
    "apply_dialect",
    "builtin",
    "is_control_flow",
    "kept_keys",
    "tables",
    "user_dialects",
    "using",
]
