"""Handoff markers: the agent a goto span or an attribute names, on the tool call that made it.

Example:
    >>> from tracekit.intake.otlp.decoded import Span
    >>> from tracekit.intake.otlp.dialect import Dialect, Edges
    >>> from tracekit.intake.otlp.dialects.tables import joined_tables
    >>> found = joined_tables((Dialect("d", edges=Edges(target_attributes=("app.to",))),), ())
    >>> span = Span("t", "a", "", "route", 1, 2, {"app.to": "billing"}, False, "", None)
    >>> write_target({("t", "a"): span}, span, found)
    >>> span.attrs["gen_ai.transfer.target.name"], span.attrs["gen_ai.transfer.mode"]
    ('billing', 'pass_control')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tracekit.intake.otlp.dialect import attribute_of
from tracekit.intake.otlp.dialects.keys import KIND, Key
from tracekit.intake.otlp.dialects.tables import Tables
from tracekit.intake.otlp.handoff import is_handoff_word, is_transfer_name

if TYPE_CHECKING:  # the decoders ask which keys to keep: they import this package
    from tracekit.intake.otlp.decoded import Span

__all__ = ["prefer_tool_markers", "write_target"]

_TARGET: Final = "gen_ai.transfer.target.name"
_MODE: Final = "gen_ai.transfer.mode"


def prefer_tool_markers(spans: dict[Key, Span]) -> None:
    """A bare goto beside the tool call that made the same handoff is no marker of its own.

    A graph may record the jump twice: under the transfer tool, and again
    under the node that ran it. The tool call names the handoff (the node).
    """
    tools: set[tuple[str, str]] = set()
    bare: list[Span] = []
    for span in spans.values():
        target = span.attrs.get(_TARGET)
        if target is None:
            continue
        if _is_tool_call(span):
            tools.add((span.trace, str(target)))
        elif span.attrs.get(KIND) is None:
            bare.append(span)
    for span in bare:
        if (span.trace, str(span.attrs[_TARGET])) in tools:
            attrs = {k: v for k, v in span.attrs.items() if k not in (_TARGET, _MODE)}
            span.attrs = {**attrs, KIND: "wrapper"}


def write_target(spans: dict[Key, Span], span: Span, found: Tables) -> None:
    """A handoff marker's target, on the tool call that made it when it is under one."""
    target = found.goto(span)
    goto = target is not None
    if target is None:
        for key in found.target_attributes:
            value = attribute_of(span.attrs, key)
            if value and isinstance(value, str):
                target = str(value)
                break
    if target is None or _TARGET in span.attrs:
        return
    marker = span
    parent = spans.get((span.trace, span.parent)) if goto and span.parent else None
    if parent is not None and _is_tool_call(parent):
        marker = parent
        span.attrs = {**span.attrs, KIND: "wrapper"}  # the tool call is the node
    if _TARGET not in marker.attrs:
        marker.attrs = {**marker.attrs, _TARGET: target, _MODE: _mode(marker)}


def _mode(marker: Span) -> str:
    """A delegation tool (``delegate_*``, no handoff word) returns to its caller; else control passes."""
    name = marker.attrs.get("gen_ai.tool.name") or marker.attrs.get("tool.name") or marker.name
    delegates = is_transfer_name(str(name)) and not is_handoff_word(str(name))
    return "return_to_caller" if delegates else "pass_control"


def _is_tool_call(span: Span) -> bool:
    attrs = span.attrs
    return (
        attrs.get(KIND) == "tool"
        or attrs.get("gen_ai.operation.name") == "execute_tool"
        or "gen_ai.tool.name" in attrs
        or "tool.name" in attrs
    )
