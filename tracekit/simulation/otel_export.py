"""OpenTelemetry SDK spans as OTLP JSON lines, as the Collector's file exporter writes them.

The SDK's own OTLP exporters need protobuf; this writes the same JSON
(``resourceSpans`` grouped by service, hex ids, integer status codes, events
with their attributes) from the SDK's :class:`ReadableSpan` with no more than
the standard library, one line per trace.

Example:
    >>> from tracekit.simulation.otel_fleet import otel_fleet
    >>> spans, truths = otel_fleet(3, seed=2)
    >>> len(otlp_json_lines(spans)) == len(truths)
    True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["otlp_json_lines"]


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list | tuple):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _attrs(attrs: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in (attrs or {}).items()]


def _span(s: ReadableSpan) -> dict[str, Any]:
    assert s.context is not None
    out: dict[str, Any] = {
        "traceId": format(s.context.trace_id, "032x"),
        "spanId": format(s.context.span_id, "016x"),
        "name": s.name,
        "kind": s.kind.value + 1,
        "startTimeUnixNano": str(s.start_time),
        "endTimeUnixNano": str(s.end_time),
        "attributes": _attrs(s.attributes),
        "status": {"code": s.status.status_code.value},
    }
    if s.status.description:
        out["status"]["message"] = s.status.description
    if s.parent is not None:
        out["parentSpanId"] = format(s.parent.span_id, "016x")
    if s.events:
        out["events"] = [
            {"timeUnixNano": str(e.timestamp), "name": e.name, "attributes": _attrs(e.attributes)}
            for e in s.events
        ]
    return out


def _request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    by_resource: dict[int, tuple[Any, list[dict[str, Any]]]] = {}
    for s in spans:
        entry = by_resource.setdefault(id(s.resource), (s.resource, []))
        entry[1].append(_span(s))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs(resource.attributes)},
                "scopeSpans": [{"scope": {"name": "otel_apps"}, "spans": found}],
            }
            for resource, found in by_resource.values()
        ]
    }


def otlp_json_lines(spans: Iterable[ReadableSpan]) -> list[str]:
    """One OTLP JSON ``ExportTraceServiceRequest`` line per trace, in the order traces began."""
    by_trace: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        assert s.context is not None
        by_trace.setdefault(s.context.trace_id, []).append(s)
    return [json.dumps(_request(group), separators=(",", ":")) for group in by_trace.values()]
