"""Decode OTLP JSON (``TracesData`` / ``ExportTraceServiceRequest``) into flat spans.

The OTLP/JSON encoding differs from protobuf's own JSON mapping in two ways
that matter here: trace and span ids are hex strings (some exporters still
write protobuf's base64, so both are read), and enums are integers (the
``STATUS_CODE_*`` names are read too). 64-bit integers (times, ``intValue``)
may be strings or numbers. Keys are lowerCamelCase; protobuf's snake_case
names are accepted as well. A document is decoded whole before anything is
kept, so a malformed line is refused as one bad line and never half-read.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any, Final

# The handoff words live in one module; re-exported here for the decoders' callers.
from tracekit.intake.otlp.decoded import Span
from tracekit.intake.otlp.dialects import kept_keys
from tracekit.intake.otlp.handoff import ARGUMENT_KEYS, is_transfer_name, target_in
from tracekit.intake.otlp.inputs import CURRENT_AGENT, INPUT, current_agent, is_turn
from tracekit.intake.otlp.shapes.words import KEPT_KEYS
from tracekit.validate import MAX_DEPTH, MAX_TS_NS, VALUE_DEPTH_REASON

__all__ = [
    "ARGUMENT_KEYS",
    "ERROR_CODES",
    "SPAN_KEYS",
    "Span",
    "UnreadableValueError",
    "chained_causes",
    "check_span",
    "decode_spans",
    "hex_id",
    "is_transfer_name",
    "names_transfer",
    "target_in",
]

ERROR_CODES: Final = frozenset({2, "2", "STATUS_CODE_ERROR", "ERROR"})
#: The span attributes the mapping reads; the rest are not kept (a big file
#: holds millions of spans until their traces are complete).
SPAN_KEYS: Final = KEPT_KEYS | frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.tool.name",
        "agent.name",
        "tool.name",
        "error.type",
        "tracekit.run_id",
        "tracekit.parent_run_id",
        "tracekit.invocation_id",
        "tracekit.node",
        "tracekit.kind",
        "tracekit.root",
        "tracekit.step",
        "tracekit.status",
        "tracekit.error",
        "tracekit.failure",
        "tracekit.delegated",
        # Edges between agents that are not OTel parents (tracekit.intake.otlp.edges):
        "gen_ai.transfer.mode",
        "gen_ai.transfer.target.name",
        "gen_ai.caller.name",
        "gen_ai.caller.agent.name",
        "gen_ai.workflow.name",
        "from_agent",
        "to_agent",
        "graph.node.id",
        "graph.node.parent_id",
        "metadata",
        # What tells a framework's shape (tracekit.intake.otlp.shapes):
        "messaging.operation",
        # Model usage and sessions:
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.model_name",
        "gen_ai.conversation.id",
        "session.id",
    }
)


class UnreadableValueError(ValueError):
    """A value of one span cannot be read: that span is refused, not its batch."""


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def hex_id(value: Any) -> str:
    """A trace or span id as lowercase hex, whether written as hex or base64.

    Example:
        >>> hex_id("AAECAwQFBgc="), hex_id("00010203A4050607")
        ('0001020304050607', '00010203a4050607')
    """
    if not value:
        return ""
    if value.__class__ is str and len(value) in (16, 32) and value.islower() and value.isalnum():
        return value  # the common case, lowercase hex, without a parse
    if not isinstance(value, str):
        raise ValueError(f"an id must be a string, got {value!r:.40}")
    if len(value) in (16, 32):  # base64 ids are 12 or 24 characters long
        try:
            int(value, 16)
        except ValueError:
            pass
        else:
            return value if value.islower() or value.isdigit() else value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        raise ValueError(f"id {value!r:.40} is neither hex nor base64") from None


def any_value(value: Any, depth: int = 1) -> Any:
    """The plain value of an OTLP ``AnyValue`` (``{"intValue": "3"}`` is 3).

    Raises:
        ValueError: arrays and lists nest deeper than :data:`MAX_DEPTH`.
    """
    if not isinstance(value, dict) or not value:
        return None
    if depth > MAX_DEPTH:
        raise ValueError(VALUE_DEPTH_REASON)
    key, inner = next(iter(value.items()))
    if key in ("stringValue", "string_value", "bytesValue", "bytes_value"):
        return inner
    if key in ("intValue", "int_value"):
        return _whole(inner, "an intValue")
    if key in ("boolValue", "bool_value"):
        return bool(inner)
    if key in ("doubleValue", "double_value"):
        try:
            return float(inner)
        except (TypeError, ValueError):
            raise UnreadableValueError(f"a doubleValue {inner!r:.40} is not a number") from None
    if key in ("arrayValue", "array_value"):
        return [any_value(v, depth + 1) for v in (inner or {}).get("values") or ()]
    if key in ("kvlistValue", "kvlist_value"):
        return attributes((inner or {}).get("values"), depth=depth + 1)
    return None


def attributes(items: Any, keys: frozenset[str] | None = None, *, depth: int = 1) -> dict[str, Any]:
    """A ``KeyValue`` list as a dict (only ``keys``, when given)."""
    if not items:
        return {}
    if not isinstance(items, list):
        raise ValueError("attributes must be a list of key/value objects")
    if keys is None:
        return {kv["key"]: any_value(kv.get("value"), depth) for kv in items}
    return {kv["key"]: any_value(kv.get("value"), depth) for kv in items if kv["key"] in keys}


def _items(items: Any) -> list[Any]:
    if not items:
        return []
    if not isinstance(items, list):
        raise ValueError("attributes must be a list of key/value objects")
    return items


def check_span(span: Span) -> None:
    """Refuse a span whose times no record can hold (see :mod:`tracekit.validate`).

    Raises:
        ValueError: a time is outside the years 1970 to 9999.
    """
    for name, value in (("startTimeUnixNano", span.start), ("endTimeUnixNano", span.end)):
        if value is not None and not 0 <= value <= MAX_TS_NS:
            raise ValueError(
                f"span {span.id}: {name} {value} is out of range (0 to {MAX_TS_NS},"
                " the years 1970 to 9999)"
            )


def _nanos(value: Any, field: str) -> int | None:
    if value is None or value in ("", "0", 0):
        return None
    return _whole(value, field)


def _whole(value: Any, what: str) -> int:
    """A whole number from JSON (a number or a string of digits); NaN, infinities and fractions refused.

    Raises:
        UnreadableValueError: not a whole number.
    """
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise UnreadableValueError(f"{what} {value!r:.40} is not a whole number")
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise UnreadableValueError(f"{what} {value!r:.40} is not a whole number") from None


def _scope_lists(resource_spans: dict[str, Any]) -> list[Any]:
    for camel, snake in (
        ("scopeSpans", "scope_spans"),
        ("instrumentationLibrarySpans", "instrumentation_library_spans"),
    ):
        found = _get(resource_spans, camel, snake)
        if found:
            return list(found)
    return []


def decode_spans(doc: dict[str, Any]) -> list[Span]:
    """Every span of one document, with its resource's ``service.name``.

    Raises:
        ValueError: the document is not OTLP traces, or a span is malformed;
            the message names the span and field.
    """
    resources = _get(doc, "resourceSpans", "resource_spans")
    if resources is None:
        raise ValueError("no resourceSpans")
    if not isinstance(resources, list):
        raise ValueError("resourceSpans is not a list")
    out: list[Span] = []
    for resource_spans in resources:
        resource = resource_spans.get("resource") or {}
        service = attributes(resource.get("attributes")).get("service.name")
        for scope in _scope_lists(resource_spans):
            for raw in scope.get("spans") or ():
                out.append(_span_or_unreadable(raw, service))
    return out


def _span_or_unreadable(raw: dict[str, Any], service: Any) -> Span:
    """The span; one a value of which cannot be read comes back marked, to be refused alone."""
    try:
        return _span(raw, service)
    except UnreadableValueError as exc:
        span_id = hex_id(_get(raw, "spanId", "span_id"))
        return Span(
            trace=hex_id(_get(raw, "traceId", "trace_id")),
            id=span_id,
            parent="",
            name=str(raw.get("name") or "")[:1024],
            start=0,
            end=None,
            attrs={},
            error=False,
            message="",
            service=None,
            unreadable=f"span {span_id}: {exc}",
        )


def _span(raw: dict[str, Any], service: Any) -> Span:
    span_id = hex_id(_get(raw, "spanId", "span_id"))
    if not span_id:
        raise ValueError(f"span {raw.get('name', '?')!r:.60} has no spanId")
    given = _get(raw, "startTimeUnixNano", "start_time_unix_nano")
    if given in (None, "", "0", 0):
        raise ValueError(f"span {span_id} has no startTimeUnixNano")
    start = _nanos(given, "startTimeUnixNano")
    if start is None:
        raise ValueError(f"span {span_id} has no startTimeUnixNano")
    status = raw.get("status") or {}
    events = raw.get("events") or ()
    name = str(raw.get("name") or "")
    exception, exception_message, exception_cause = _exception(events)
    kept = kept_keys(SPAN_KEYS)
    attrs = {
        kv["key"]: any_value(kv.get("value"), 1)
        for kv in _items(raw.get("attributes"))
        if kept[kv["key"]]
    }
    if is_turn(name):  # agents with no span: the agent is only in the turn's input
        agent = current_agent(name, attributes(raw.get("attributes"), _INPUT_KEYS).get(INPUT))
        if agent:
            attrs[CURRENT_AGENT] = agent
    return Span(
        trace=hex_id(_get(raw, "traceId", "trace_id")),
        id=span_id,
        parent=hex_id(_get(raw, "parentSpanId", "parent_span_id")),
        name=name,
        start=start,
        end=_nanos(_get(raw, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano"),
        attrs=attrs,
        error=status.get("code") in ERROR_CODES,
        message=str(status.get("message") or ""),
        service=service if isinstance(service, str) else None,
        exception=exception,
        exception_message=exception_message,
        exception_cause=exception_cause,
        links=tuple(
            (hex_id(_get(link, "traceId", "trace_id")), hex_id(_get(link, "spanId", "span_id")))
            for link in raw.get("links") or ()
        ),
        target=_dict_target(raw, events) if names_transfer(name, attrs) else None,
        transfer=is_transfer_name(name),
    )


def _exception(events: Any) -> tuple[str | None, str | None, str | None]:
    """The type, message and chained causes of the first ``exception`` event that has a type."""
    for event in events or ():
        if event.get("name") == "exception":
            found = attributes(event.get("attributes"))
            if found.get("exception.type"):
                message = found.get("exception.message")
                cause = chained_causes(found.get("exception.stacktrace"))
                return str(found["exception.type"]), str(message) if message else None, cause
    return None, None, None


_CHAINED: Final = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


def chained_causes(stacktrace: Any) -> str | None:
    """The part of a Python stack trace that shows what the exception was raised from.

    Python prints the exceptions a raise was chained to first, each followed
    by a "direct cause" (``raise ... from e``) or "during handling" line; only
    that head is kept (None without one), so that a wrapper's span can be
    matched to the child that raised first.

    Example:
        >>> said = "The above exception was the direct cause of the following exception:"
        >>> chained_causes(f"KeyError: 'x' {said} AppError: bad"), chained_causes("AppError: bad")
        ("KeyError: 'x'", None)
    """
    if not isinstance(stacktrace, str):
        return None
    cut = max(stacktrace.rfind(marker) for marker in _CHAINED)
    return stacktrace[:cut].strip() if cut > 0 else None


_INPUT_KEYS: Final = frozenset({INPUT})


def names_transfer(name: str, attrs: dict[str, Any]) -> bool:
    """Whether a span's name or its tool's name reads as a transfer (its target is then read).

    Example:
        >>> names_transfer("FunctionTool.acall", {"tool.name": "handoff"})
        True
    """
    if is_transfer_name(name):
        return True
    tool = attrs.get("tool.name") or attrs.get("gen_ai.tool.name")
    return isinstance(tool, str) and is_transfer_name(tool)


def _dict_target(raw: dict[str, Any], events: Any) -> str | None:
    attrs = attributes(raw.get("attributes"))
    values: list[Any] = [attrs.get(key) for key in ARGUMENT_KEYS]
    for event in events:
        values.extend(attributes(event.get("attributes")).values())
    return target_in(values)
