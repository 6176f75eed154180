"""OTLP protobuf bodies walked into the spans table: columns, not a Python object a span.

The collector's bodies (``ExportTraceServiceRequest``, upb-backed messages)
become the same table as :mod:`~tracekit.intake.otlp.columns.decode` makes
of JSON (:data:`~tracekit.intake.otlp.columns.decode.SPAN_COLUMNS`), one list
a column: only the fields the set-based mapping reads are taken.

Example:
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ...     ExportTraceServiceRequest)
    >>> request = ExportTraceServiceRequest()
    >>> span = request.resource_spans.add().scope_spans.add().spans.add()
    >>> span.trace_id, span.span_id = bytes(range(16)), bytes(range(8))
    >>> span.name, span.start_time_unix_nano = "invoke_agent triage", 1_000_000
    >>> table = proto_spans([(7, request.SerializeToString())])
    >>> table.column("id").to_pylist(), table.column("line").to_pylist(), table.column("exact").to_pylist()
    (['0001020304050607'], [7], [True])
"""

from __future__ import annotations

from typing import Any, Final

import pyarrow as pa

from tracekit.intake.otlp.columns.decode import READ_KEYS, SPAN_COLUMNS
from tracekit.intake.otlp.decode_json import ARGUMENT_KEYS, SPAN_KEYS
from tracekit.intake.otlp.limits import MAX_DURATION_NS
from tracekit.validate import MAX_TS_NS

__all__ = ["proto_spans"]

_BY_KEY: Final = {key: column for column, key in READ_KEYS.items()}
_OTHERS: Final = SPAN_KEYS - set(READ_KEYS.values())
_ARGUMENTS: Final = frozenset(ARGUMENT_KEYS)
_TOKENS: Final = frozenset({"tokens_in", "tokens_out"})
_TYPES: Final = {
    "line": pa.int64(),
    "ri": pa.int64(),
    "pos": pa.int64(),
    "start_ns": pa.int64(),
    "end_ns": pa.int64(),
    "status_code": pa.int64(),
    "tokens_in": pa.int64(),
    "tokens_out": pa.int64(),
    "typed": pa.bool_(),
    "others": pa.int64(),
    "arguments": pa.int64(),
    "events": pa.int64(),
    "link_traces": pa.list_(pa.string()),
    "exact": pa.bool_(),
}


def proto_spans(bodies: list[tuple[int, bytes]]) -> pa.Table:
    """The spans table of serialized requests, each with its position (a spool offset, a line).

    A body that is not such a message raises ``ValueError``, as
    :func:`~tracekit.intake.otlp.decode_proto.decode_spans_proto` does.
    """
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    columns: dict[str, list[Any]] = {name: [] for name in (*SPAN_COLUMNS, "exact")}
    for position, body in bodies:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError) as exc:
            raise ValueError(f"not an OTLP protobuf message ({exc})") from None
        for ri, resource_spans in enumerate(request.resource_spans, 1):
            service = _service(resource_spans.resource.attributes)
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    _add(columns, (position, ri), service, span)
    return pa.table({n: pa.array(v, _TYPES.get(n, pa.string())) for n, v in columns.items()})


def _service(attributes: Any) -> str | None:
    found: Any = None
    for kv in attributes:
        if kv.key == "service.name":
            found = kv.value.string_value if kv.value.WhichOneof("value") == "string_value" else 0
    return found if isinstance(found, str) else None


def _add(
    columns: dict[str, list[Any]], where: tuple[int, int], service: str | None, span: Any
) -> None:
    read: dict[str, Any] = dict.fromkeys(READ_KEYS)
    typed, others, arguments = True, 0, 0
    for kv in span.attributes:
        key = kv.key
        column = _BY_KEY.get(key)
        if column is not None:
            kind = kv.value.WhichOneof("value")
            wanted = "int_value" if column in _TOKENS else "string_value"
            typed = typed and kind == wanted
            read[column] = getattr(kv.value, wanted) if kind == wanted else None
        elif key in _OTHERS:
            others += 1
        if key in _ARGUMENTS:
            arguments += 1
    trace, span_id = span.trace_id, span.span_id
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    links = [link.trace_id.hex() for link in span.links]
    exact = (
        len(trace) == 16
        and len(span_id) == 8
        and len(span.parent_span_id) in (0, 8)
        and 0 < start <= MAX_TS_NS
        and end <= MAX_TS_NS
        and (not end or start <= end <= start + MAX_DURATION_NS)  # the door's limits
        and all(len(t) == 32 for t in links)
    )
    if not exact:  # the caller reads this batch the per-span way; keep the table valid
        start, end = 1, 0
    for name, value in (
        ("line", where[0]),
        ("ri", where[1]),
        ("pos", len(columns["line"])),
        ("raw", None),
        ("service", service),
        ("trace", trace.hex()),
        ("id", span_id.hex()),
        ("parent", span.parent_span_id.hex()),
        ("name", span.name),
        ("start_ns", start),
        ("end_ns", end or None),
        ("status_code", span.status.code),
        ("message", span.status.message),
        ("typed", typed),
        ("others", others),
        ("arguments", arguments),
        ("events", len(span.events)),
        ("link_traces", links),
        ("exact", exact),
    ):
        columns[name].append(value)
    for column, value in read.items():
        columns[column].append(value)
