"""What a dialect says of a span's error: control flow, a loop refusal, a code, a failure.

Example:
    >>> from tracekit.intake.otlp.decoded import Span
    >>> from tracekit.intake.otlp.dialects.tables import tables
    >>> span = Span("t", "a", "", "node", 1, 2, {"error.type": "x.ParentCommand"}, True, "", None)
    >>> write_errors({("t", "a"): span}, span, tables())
    >>> span.attrs["tracekit.control_flow"]
    'ParentCommand'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tracekit.intake.otlp.dialects.keys import CONTROL_FLOW_KEY, Key
from tracekit.intake.otlp.dialects.tables import Tables, short_type

if TYPE_CHECKING:  # the decoders ask which keys to keep: they import this package
    from tracekit.intake.otlp.decoded import Span

__all__ = ["mark_failed", "write_errors"]


def mark_failed(span: Span, found: Tables) -> None:
    """A span whose attributes say it failed (a caught error given back as output)."""
    if found.failed.matches(span.name, span.attrs):
        span.error = True


def write_errors(spans: dict[Key, Span], span: Span, found: Tables) -> None:
    attrs = span.attrs
    if "error.type" not in attrs:
        for key in found.code_from:
            code = attrs.get(key)
            if code:  # an error written only as an attribute
                span.attrs = attrs = {**attrs, "error.type": str(code)}
                span.error = True
                break
    kind = attrs.get("error.type") or span.exception
    if not kind or not isinstance(kind, str):
        return
    short = short_type(kind)
    if short in found.control_flow or (short in found.cancellation and _on_purpose(spans, span)):
        span.attrs = {**attrs, CONTROL_FLOW_KEY: short}
    elif short in found.loop_refusal and "tracekit.error" not in attrs:
        message = span.message or span.exception_message or short
        error = {"code": "AGENT_RECURSION", "message": message, "type": kind}
        span.attrs = {**attrs, "tracekit.error": json.dumps(error)}


def _on_purpose(spans: dict[Key, Span], span: Span) -> bool:
    """A cancellation the span above did not raise on: the branch was cancelled on purpose."""
    above = spans.get((span.trace, span.parent)) if span.parent else None
    return above is not None and not above.error and above.exception is None
