"""The limits a span meets at the door: one rule table for every decoder (JSON and protobuf).

Both decoders give the same :class:`~tracekit.intake.otlp.decode_json.Span`;
:func:`check_limits` runs the rules below on it, in order, before anything
keeps it. A rule is a small pure function that returns why the span is
refused (or None): a refused span is refused alone, with that reason, and
its batch goes on. Strings are never a reason to refuse: a string longer
than its limit is cut, with a marker that says how much was cut (as the
OpenTelemetry SDK's attribute limits cut, but visibly).

| what | limit | past it |
| --- | --- | --- |
| a value (JSON) | a time or ``intValue`` a whole number; a ``doubleValue`` a number | refused |
| a time | 0 to :data:`~tracekit.validate.MAX_TS_NS` (1970 to 9999) | refused |
| end before start | never | refused |
| a duration | :data:`MAX_DURATION_NS` (31 days) | refused |
| a token count | a whole number, 0 to :data:`MAX_COUNT` | refused |
| an integer attribute | a signed 64-bit integer | refused |
| a name (span, service, agent, tool, model) | :data:`MAX_NAME_CHARS` | cut, marked |
| any other string | :data:`MAX_TEXT_CHARS` | cut, marked |

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("ab" * 16, "cd" * 8, "", "x" * 2000, 5, 2, {}, False, "", None)
    >>> check_limits(span)
    'span cdcdcdcdcdcdcdcd: it ends before it starts (end 2 < start 5)'
    >>> span.end = 9
    >>> check_limits(span), len(span.name), span.name[-23:]
    (None, 1023, 'x… [999 characters cut]')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

import msgspec

from tracekit.intake.otlp.decode_json import Span
from tracekit.validate import MAX_TS_NS

__all__ = [
    "COUNT_KEYS",
    "MAX_COUNT",
    "MAX_DURATION_NS",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "RULES",
    "check_limits",
    "cut",
    "raw_text",
]

#: The longest span that is believed: 31 days (a longer one would skew every latency).
MAX_DURATION_NS: Final = 31 * 86_400 * 1_000_000_000
#: The largest token count: 2**53 - 1, the largest whole number every JSON reader keeps exact.
MAX_COUNT: Final = 2**53 - 1
#: Characters kept of a name: a span's, a service's, an agent's, a tool's, a model's.
MAX_NAME_CHARS: Final = 1024
#: Characters kept of any other string (attribute values, status and exception text).
MAX_TEXT_CHARS: Final = 16_384
#: The attributes that hold a count of tokens.
COUNT_KEYS: Final = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "llm.token_count.prompt",
    "llm.token_count.completion",
)
#: The attributes that hold a name (cut at :data:`MAX_NAME_CHARS`).
NAME_KEYS: Final = frozenset(
    {
        "gen_ai.agent.name",
        "agent.name",
        "gen_ai.tool.name",
        "tool.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "llm.model_name",
        "gen_ai.caller.name",
        "gen_ai.caller.agent.name",
        "gen_ai.transfer.target.name",
        "gen_ai.workflow.name",
        "from_agent",
        "to_agent",
        "tracekit.node",
    }
)
_INT64: Final = (-(2**63), 2**63 - 1)

Rule = Callable[[Span], "str | None"]


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, its end a marker saying how many were cut.

    The marker counts in the limit, so a string cut once is never cut again.

    Example:
        >>> cut("a" * 100, 40), cut("abc", 40)
        ('aaaaaaaaaaaaaaaaaa… [82 characters cut]', 'abc')
    """
    if len(text) <= limit:
        return text
    kept = max(limit - len(f"… [{len(text)} characters cut]"), 0)
    return f"{text[:kept]}… [{len(text) - kept} characters cut]"


def _readable(span: Span) -> str | None:
    return span.unreadable


def _times(span: Span) -> str | None:
    for name, value in (("startTimeUnixNano", span.start), ("endTimeUnixNano", span.end)):
        if value is not None and not 0 <= value <= MAX_TS_NS:
            return (
                f"span {span.id}: {name} {value} is out of range (0 to {MAX_TS_NS},"
                " the years 1970 to 9999)"
            )
    return None


def _order(span: Span) -> str | None:
    if span.end is not None and span.end < span.start:
        return f"span {span.id}: it ends before it starts (end {span.end} < start {span.start})"
    return None


def _duration(span: Span) -> str | None:
    if span.end is not None and span.end - span.start > MAX_DURATION_NS:
        days = (span.end - span.start) / 86_400e9
        return (
            f"span {span.id}: it lasts {days:,.0f} days, over the limit of"
            f" {MAX_DURATION_NS // 86_400_000_000_000} days"
        )
    return None


def _counts(span: Span) -> str | None:
    if not span.attrs:
        return None
    for key in COUNT_KEYS:
        value = span.attrs.get(key)
        if value is None or isinstance(value, str):
            continue  # absent; a string is read as no count by the mapping
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"span {span.id}: {key} is not a number ({value!r:.40})"
        if isinstance(value, float) and not math.isfinite(value):
            return f"span {span.id}: {key} is {value} (a count must be a finite number)"
        if not 0 <= value <= MAX_COUNT:
            return f"span {span.id}: {key} {str(value)[:40]} is out of range (0 to {MAX_COUNT})"
    return None


def _integers(span: Span) -> str | None:
    for key, value in span.attrs.items():
        bad = _big_int(value)
        if bad is not None:
            shown = str(bad)[:40]
            return f"span {span.id}: attribute {key[:80]!r} holds {shown} (past a 64-bit integer)"
    return None


def _big_int(value: Any) -> int | None:
    if value.__class__ is int:
        return None if _INT64[0] <= value <= _INT64[1] else value
    if isinstance(value, list):
        return next((b for v in value if (b := _big_int(v)) is not None), None)
    if isinstance(value, dict):
        return next((b for v in value.values() if (b := _big_int(v)) is not None), None)
    return None


#: The rules, in order: the first that answers refuses the span with its words.
RULES: Final[tuple[Rule, ...]] = (_readable, _times, _order, _duration, _counts, _integers)


def check_limits(span: Span) -> str | None:
    """Why the span is refused (the first rule that says so), or None; cuts its long strings.

    A span that passes may have been changed: each string past its limit is
    cut with a marker (:func:`cut`).
    """
    for rule in RULES:
        reason = rule(span)
        if reason is not None:
            return reason
    _cut_strings(span)
    return None


def _cut_strings(span: Span) -> None:
    if len(span.name) > MAX_NAME_CHARS:
        span.name = cut(span.name, MAX_NAME_CHARS)
    if span.service is not None and len(span.service) > MAX_NAME_CHARS:
        span.service = cut(span.service, MAX_NAME_CHARS)
    if span.target is not None and len(span.target) > MAX_NAME_CHARS:
        span.target = cut(span.target, MAX_NAME_CHARS)
    if len(span.message) > MAX_TEXT_CHARS:
        span.message = cut(span.message, MAX_TEXT_CHARS)
    for field in ("exception", "exception_message", "exception_cause"):
        value = getattr(span, field)
        if value is not None and len(value) > MAX_TEXT_CHARS:
            setattr(span, field, cut(value, MAX_TEXT_CHARS))
    attrs = span.attrs
    for key, value in attrs.items():
        if value.__class__ is str and len(value) <= MAX_NAME_CHARS:
            continue  # within both limits: as it is
        limit = MAX_NAME_CHARS if key in NAME_KEYS else MAX_TEXT_CHARS
        attrs[key] = _cut_value(value, limit)


def _cut_value(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return cut(value, limit)
    if isinstance(value, list):
        return [_cut_value(v, limit) for v in value]
    if isinstance(value, dict):
        return {cut(str(k), limit): _cut_value(v, limit) for k, v in value.items()}
    return value


def raw_text(span: Span) -> str:
    """A refused span as ``rejects`` keeps it: its ids, times, name and attributes (JSON).

    Example:
        >>> raw_text(Span("ab" * 16, "cd" * 8, "", "x", 1, 2, {}, False, "", None))[:30]
        '{"traceId":"ababababababababab'
    """
    shown = {
        "traceId": span.trace,
        "spanId": span.id,
        "parentSpanId": span.parent,
        "name": span.name[:1024],
        "startTimeUnixNano": str(span.start),
        "endTimeUnixNano": None if span.end is None else str(span.end),
        "attributes": {k: _shown(v) for k, v in span.attrs.items()},
    }
    return msgspec.json.encode(shown).decode()[:65536]


def _shown(value: Any) -> Any:
    """A value JSON can hold: an integer past 64 bits, NaN and infinities as text."""
    if value.__class__ is int and abs(value) >= 2**63:
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value[:1024]
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _shown(v) for k, v in value.items()}
    return value
