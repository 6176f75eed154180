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
    "message_document",
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


def message_document(message: Any) -> dict[str, Any]:
    """A protobuf ``ExportTraceServiceRequest`` as the OTLP JSON object it stands for.

    Walked field by field (protobuf's ``MessageToDict`` costs several times
    more): ids as hex, 64-bit numbers as strings, enums as numbers, the JSON
    decoder reads them all.

    Raises:
        RecursionError: values nest deeper than Python's stack allows.
    """
    return {"resourceSpans": [_resource_spans(rs) for rs in message.resource_spans]}


def _resource_spans(rs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"scopeSpans": [_scope_spans(ss) for ss in rs.scope_spans]}
    if rs.HasField("resource"):
        out["resource"] = {"attributes": _kvs(rs.resource.attributes)}
    if rs.schema_url:
        out["schemaUrl"] = rs.schema_url
    return out


def _scope_spans(ss: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"spans": [_proto_span(span) for span in ss.spans]}
    if ss.HasField("scope"):
        scope: dict[str, Any] = {"name": ss.scope.name}
        if ss.scope.version:
            scope["version"] = ss.scope.version
        if ss.scope.attributes:
            scope["attributes"] = _kvs(ss.scope.attributes)
        out["scope"] = scope
    return out


def _proto_span(s: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "traceId": s.trace_id.hex(),
        "spanId": s.span_id.hex(),
        "name": s.name,
        "kind": int(s.kind),
        "startTimeUnixNano": str(s.start_time_unix_nano),
    }
    if s.parent_span_id:
        d["parentSpanId"] = s.parent_span_id.hex()
    if s.end_time_unix_nano:
        d["endTimeUnixNano"] = str(s.end_time_unix_nano)
    if s.trace_state:
        d["traceState"] = s.trace_state
    if s.flags:
        d["flags"] = s.flags
    if s.attributes:
        d["attributes"] = _kvs(s.attributes)
    if s.events:
        d["events"] = [
            {
                "timeUnixNano": str(e.time_unix_nano),
                "name": e.name,
                "attributes": _kvs(e.attributes),
            }
            for e in s.events
        ]
    if s.links:
        d["links"] = [
            {
                "traceId": k.trace_id.hex(),
                "spanId": k.span_id.hex(),
                "attributes": _kvs(k.attributes),
            }
            for k in s.links
        ]
    if s.status.code or s.status.message:
        d["status"] = {"code": int(s.status.code), "message": s.status.message}
    return d


def _kvs(kvs: Any) -> list[dict[str, Any]]:
    return [{"key": kv.key, "value": _any(kv.value)} for kv in kvs]


def _any(v: Any) -> dict[str, Any]:
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": v.string_value}
    if kind == "int_value":
        return {"intValue": str(v.int_value)}
    if kind == "bool_value":
        return {"boolValue": v.bool_value}
    if kind == "double_value":
        return {"doubleValue": v.double_value}
    if kind == "array_value":
        return {"arrayValue": {"values": [_any(x) for x in v.array_value.values]}}
    if kind == "kvlist_value":
        return {"kvlistValue": {"values": _kvs(v.kvlist_value.values)}}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(v.bytes_value).decode()}
    return {}
