"""The fast path of OTLP JSON decoding: msgspec decodes a line straight into structs.

The structs below mirror ``TracesData`` in its OTLP/JSON (lowerCamelCase)
spelling; unknown fields are ignored. Anything this path cannot take (the
snake_case spelling, a value of an unexpected type, a malformed span) raises,
and the caller falls back to the dict path in :mod:`tracekit.intake.otlp.decode_json`,
which accepts every spelling and words the error. On the simulated fleet this
path reads a line several times faster than decoding to dicts first.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from tracekit.intake.otlp.decode_json import (
    ERROR_CODES,
    SPAN_KEYS,
    Span,
    chained_causes,
    hex_id,
)
from tracekit.intake.otlp.dialects import kept_keys
from tracekit.intake.otlp.handoff import ARGUMENT_KEYS, TRANSFER_NAMES, is_transfer_name, target_in
from tracekit.intake.otlp.inputs import CURRENT_AGENT, INPUT, current_agent, is_turn
from tracekit.intake.otlp.names import NameMemo
from tracekit.validate import MAX_DEPTH, VALUE_DEPTH_REASON

__all__ = ["NESTED", "Ids", "decode_spans_fast", "resource_service", "typed_span"]


class _AnyValue(msgspec.Struct):
    stringValue: str | None = None
    boolValue: bool | None = None
    intValue: int | str | None = None
    doubleValue: float | str | None = None
    arrayValue: _ArrayValue | None = None
    kvlistValue: _KvList | None = None
    bytesValue: str | None = None


class _ArrayValue(msgspec.Struct):
    values: list[_AnyValue] = []


class _KeyValue(msgspec.Struct):
    key: str
    value: _AnyValue | None = None


class _KvList(msgspec.Struct):
    values: list[_KeyValue] = []


class _Status(msgspec.Struct):
    code: int | str | None = None
    message: str | None = None


class _Event(msgspec.Struct):
    name: str = ""
    attributes: list[_KeyValue] = []


class _Link(msgspec.Struct):
    traceId: str = ""
    spanId: str = ""


class _Span(msgspec.Struct):
    spanId: str = ""
    traceId: str = ""
    parentSpanId: str = ""
    name: str = ""
    startTimeUnixNano: int | str | None = None
    endTimeUnixNano: int | str | None = None
    attributes: list[_KeyValue] = []
    status: _Status | None = None
    events: list[_Event] = []
    links: list[_Link] = []


class _Scope(msgspec.Struct):
    spans: list[_Span] = []


class _Resource(msgspec.Struct):
    attributes: list[_KeyValue] = []


class _ResourceSpans(msgspec.Struct):
    resource: _Resource | None = None
    scopeSpans: list[_Scope] = []
    instrumentationLibrarySpans: list[_Scope] = []


class _TracesData(msgspec.Struct):
    resourceSpans: list[_ResourceSpans] | None = None


_DECODER: Final = msgspec.json.Decoder(_TracesData)
#: A line's nested values in one call (:mod:`tracekit.intake.otlp.shell`): each
#: span's attributes, events and links, and each resource, as the structs above.
NESTED: Final = msgspec.json.Decoder(
    tuple[list[list[_KeyValue]], list[list[_Event]], list[list[_Link]], list[_Resource | None]]
)


def _plain(value: _AnyValue | None, depth: int = 1) -> Any:
    if value is None:
        return None
    if depth > MAX_DEPTH:
        raise ValueError(VALUE_DEPTH_REASON)
    if value.stringValue is not None:
        return value.stringValue
    if value.boolValue is not None:
        return value.boolValue
    if value.intValue is not None:
        return int(value.intValue)
    if value.doubleValue is not None:
        return float(value.doubleValue)
    if value.arrayValue is not None:
        return [_plain(v, depth + 1) for v in value.arrayValue.values]
    if value.kvlistValue is not None:
        return _attrs(value.kvlistValue.values, depth=depth + 1)
    return value.bytesValue


def _attrs(
    items: list[_KeyValue], keys: frozenset[str] | None = None, *, depth: int = 1
) -> dict[str, Any]:
    if keys is None:
        return {kv.key: _plain(kv.value, depth) for kv in items}
    # Most kept values are strings: read without a call (``_plain``'s first answer).
    return {
        kv.key: v.stringValue
        if (v := kv.value) is not None and v.stringValue is not None
        else _plain(v, depth)
        for kv in items
        if kv.key in keys
    }


def _kept(items: list[_KeyValue], kept: NameMemo[bool]) -> dict[str, Any]:
    """The attributes some rule reads (:func:`~tracekit.intake.otlp.dialects.kept_keys`)."""
    # Most kept values are strings: read without a call (``_plain``'s first answer).
    return {
        kv.key: v.stringValue
        if (v := kv.value) is not None and v.stringValue is not None
        else _plain(v, 1)
        for kv in items
        if kept[kv.key]
    }


def decode_spans_fast(data: bytes) -> list[Span]:
    """Every span of one OTLP JSON line, or an exception to fall back on."""
    doc = _DECODER.decode(data)
    if doc.resourceSpans is None:
        raise ValueError("no resourceSpans in the lowerCamelCase spelling")
    out: list[Span] = []
    ids = Ids()  # trace and parent ids repeat within a document
    for resource_spans in doc.resourceSpans:
        service = resource_service(resource_spans.resource)
        for scope in resource_spans.scopeSpans or resource_spans.instrumentationLibrarySpans:
            for raw in scope.spans:
                out.append(_span(raw, service, ids))
    return out


def resource_service(resource: _Resource | None) -> str | None:
    """The ``service.name`` of a resource, if a string."""
    service = _attrs(resource.attributes).get("service.name") if resource else None
    return service if isinstance(service, str) else None


def typed_span(
    head: Any,
    attributes: list[_KeyValue],
    events: list[_Event],
    links: list[_Link],
    service: str | None,
    ids: Ids,
) -> Span:
    """A span whose scalar fields (``head``: ids, name, times, status) and nested values were read apart.

    ``head`` has the scalar fields of the lowerCamelCase span, typed as here;
    the span is the one :func:`decode_spans_fast` gives for the same JSON.
    """
    raw = _Span(
        head.spanId, head.traceId, head.parentSpanId, head.name, head.startTimeUnixNano,
        head.endTimeUnixNano, attributes, head.status, events, links,
    )  # fmt: skip
    return _span(raw, service, ids)


class Ids(dict[str, str]):
    """Ids as lowercase hex (:func:`hex_id`), each distinct id of a document converted once."""

    def __missing__(self, value: str) -> str:
        # The common case, lowercase hex, without a call: hex_id's own first test.
        if len(value) in (16, 32) and value.islower() and value.isalnum():
            found = value
        else:
            found = hex_id(value)
        self[value] = found
        return found


#: Per span name: whether it reads as a transfer, whether it starts an agent's turn.
_NAME_FLAGS: Final = NameMemo(lambda name: (is_transfer_name(name), is_turn(name)))
_NO_EXCEPTION: Final = (None, None, None)


def _span(raw: _Span, service: str | None, ids: Ids) -> Span:
    # A time of "", "0" or 0 is not set; a bad string raises ValueError: the caller falls back.
    start = raw.startTimeUnixNano
    start = int(start) if start and start != "0" else None
    end = raw.endTimeUnixNano
    if not raw.spanId or start is None:
        raise ValueError("a span without spanId or start")
    status = raw.status
    transfer, turn = _NAME_FLAGS[raw.name]
    exception, message, cause = _exception(raw.events) if raw.events else _NO_EXCEPTION
    attrs = _kept(raw.attributes, kept_keys(SPAN_KEYS)) if raw.attributes else {}
    if turn:  # agents with no span: the agent is only in the turn's input
        agent = current_agent(raw.name, _attrs(raw.attributes, _INPUT_KEYS).get(INPUT))
        if agent:
            attrs[CURRENT_AGENT] = agent
    named = transfer
    if not named:  # a transfer tool may have a plain span name (names_transfer)
        tool = attrs.get("tool.name") or attrs.get("gen_ai.tool.name")
        named = isinstance(tool, str) and TRANSFER_NAMES[tool]
    return Span(
        trace=ids[raw.traceId],
        id=ids[raw.spanId],
        parent=ids[raw.parentSpanId],
        name=raw.name,
        start=start,
        end=int(end) if end and end != "0" else None,
        attrs=attrs,
        error=status is not None and status.code in ERROR_CODES,
        message=(status.message or "") if status is not None else "",
        service=service,
        exception=exception,
        exception_message=message,
        exception_cause=cause,
        links=tuple((ids[link.traceId], ids[link.spanId]) for link in raw.links)
        if raw.links
        else (),
        target=_target(raw) if named else None,
        transfer=transfer,
    )


def _exception(events: list[_Event]) -> tuple[str | None, str | None, str | None]:
    """The type, message and chained causes of the first ``exception`` event that has a type."""
    for event in events:
        if event.name == "exception":
            found = _attrs(event.attributes)
            if found.get("exception.type"):
                message = found.get("exception.message")
                return (
                    str(found["exception.type"]),
                    str(message) if message else None,
                    chained_causes(found.get("exception.stacktrace")),
                )
    return _NO_EXCEPTION


_INPUT_KEYS: Final = frozenset({INPUT})


def _target(raw: _Span) -> str | None:
    """The agent a transfer tool names, in its arguments or its events' attributes."""
    attrs = _attrs(raw.attributes)
    values: list[Any] = [attrs.get(key) for key in ARGUMENT_KEYS]
    for event in raw.events:
        values.extend(_attrs(event.attributes).values())
    return target_in(values)
