"""Decode OTLP protobuf (``ExportTraceServiceRequest`` / ``TracesData``) into flat spans.

The protobuf path beside the JSON one (:mod:`tracekit.intake.otlp.decode_json`):
the same :class:`~tracekit.intake.otlp.decode_json.Span` comes out of both, so the
same spans map to the same v1 records whichever encoding carried them. Ids
are bytes on the wire and hex here; a ``bytesValue`` attribute is base64, as
OTLP/JSON writes it; only the attributes the mapping reads are kept.

Example:
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ...     ExportTraceServiceRequest)
    >>> request = ExportTraceServiceRequest()
    >>> span = request.resource_spans.add().scope_spans.add().spans.add()
    >>> span.trace_id, span.span_id = bytes(range(16)), bytes(range(8))
    >>> span.name, span.start_time_unix_nano = "invoke_agent triage", 1_000_000
    >>> [(s.id, s.name, s.start) for s in decode_spans_proto(request.SerializeToString())]
    [('0001020304050607', 'invoke_agent triage', 1000000)]
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from tracekit.intake.otlp.decode_json import SPAN_KEYS, Span, chained_causes, names_transfer
from tracekit.intake.otlp.dialects import kept_keys
from tracekit.intake.otlp.handoff import ARGUMENT_KEYS, is_transfer_name, target_in
from tracekit.intake.otlp.inputs import CURRENT_AGENT, INPUT, current_agent, is_turn
from tracekit.validate import MAX_DEPTH, VALUE_DEPTH_REASON

__all__ = [
    "check_message",
    "decode_spans_proto",
    "iter_spans_of_message",
    "parse",
    "spans_of_message",
]

_ERROR = 2  # STATUS_CODE_ERROR


def decode_spans_proto(data: bytes) -> list[Span]:
    """Every span of one serialized ``ExportTraceServiceRequest`` (or ``TracesData``).

    Both messages have ``resource_spans`` as field 1, so either decodes.

    Raises:
        ValueError: the bytes are not such a message (truncated, not protobuf),
            or a span has no id or no start time.
    """
    return spans_of_message(parse(data))


def parse(data: bytes) -> Any:
    """A serialized ``ExportTraceServiceRequest`` (or ``TracesData``), parsed.

    Raises:
        ValueError: the bytes are not such a message.
    """
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except (DecodeError, RecursionError) as exc:
        raise ValueError(f"not an OTLP protobuf message ({exc})") from None
    return request


def spans_of_message(request: Any) -> list[Span]:
    """Every span of a decoded ``ExportTraceServiceRequest`` (gRPC hands one over decoded).

    Raises:
        ValueError: a span has no id or no start time, or a value nests too deep.
    """
    check_message(request)
    return list(iter_spans_of_message(request))


def check_message(request: Any) -> None:
    """Refuse a message a span of which has no id or no start time (before any is read).

    Raises:
        ValueError: the first such span, named.
    """
    for resource_spans in request.resource_spans:
        for scope in resource_spans.scope_spans:
            for raw in scope.spans:
                if not raw.span_id:
                    raise ValueError(f"span {raw.name!r:.60} has no spanId")
                if not raw.start_time_unix_nano:
                    raise ValueError(f"span {raw.span_id.hex()} has no startTimeUnixNano")


def iter_spans_of_message(request: Any) -> Iterator[Span]:
    """The spans of a decoded message, one at a time (:func:`spans_of_message`).

    Raises:
        ValueError: a value nests too deep.
    """
    for resource_spans in request.resource_spans:
        service: Any = None
        for kv in resource_spans.resource.attributes:
            if kv.key == "service.name":
                service = _plain(kv.value)
        service = service if isinstance(service, str) else None
        for scope in resource_spans.scope_spans:
            for raw in scope.spans:
                yield _span(raw, service)


def _plain(value: Any, depth: int = 1) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(VALUE_DEPTH_REASON)
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_plain(v, depth + 1) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _plain(kv.value, depth + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def _span(raw: Any, service: str | None) -> Span:
    span_id = raw.span_id.hex()
    if not span_id:
        raise ValueError(f"span {raw.name!r:.60} has no spanId")
    if not raw.start_time_unix_nano:
        raise ValueError(f"span {span_id} has no startTimeUnixNano")
    kept = kept_keys(SPAN_KEYS)
    attrs = {kv.key: _plain(kv.value) for kv in raw.attributes if kept[kv.key]}
    name = raw.name
    if is_turn(name):  # agents with no span: the agent is only in the turn's input
        agent = current_agent(name, _attribute(raw.attributes, INPUT))
        if agent:
            attrs[CURRENT_AGENT] = agent
    transfer = is_transfer_name(name)
    return Span(
        trace=raw.trace_id.hex(),
        id=span_id,
        parent=raw.parent_span_id.hex(),
        name=raw.name,
        start=raw.start_time_unix_nano,
        end=raw.end_time_unix_nano or None,
        attrs=attrs,
        error=raw.status.code == _ERROR,
        message=raw.status.message,
        service=service,
        target=_target(raw) if transfer or names_transfer(name, attrs) else None,
        transfer=transfer,
        **_exception(raw.events),
    )


def _attribute(items: Any, key: str) -> Any:
    for kv in items:
        if kv.key == key:
            return _plain(kv.value)
    return None


def _target(raw: Any) -> str | None:
    """The agent a transfer tool names, in its arguments or its events' attributes."""
    values: list[Any] = [_attribute(raw.attributes, key) for key in ARGUMENT_KEYS]
    for event in raw.events:
        values.extend(_plain(kv.value) for kv in event.attributes)
    return target_in(values)


def _exception(events: Any) -> dict[str, Any]:
    """The type, message and chained causes of the first exception event with a type."""
    for event in events:
        if event.name == "exception":
            found = {kv.key: _plain(kv.value) for kv in event.attributes}
            if found.get("exception.type"):
                message = found.get("exception.message")
                return {
                    "exception": str(found["exception.type"]),
                    "exception_message": str(message) if message else None,
                    "exception_cause": chained_causes(found.get("exception.stacktrace")),
                }
    return {}
