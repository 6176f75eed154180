"""OTLP spans as received: each span of a line as one row of columns, all of it kept.

A line is accepted or refused whole by the one decoder
(:func:`~tracekit.intake.otlp.decode_json.decode_spans`, the same words as
``tracekit tree``); the spans of an accepted line become rows of
:data:`SPAN_FIELDS`: ids, name, kind, times, status and service as columns,
and the attributes, events (exceptions with their stack traces), links,
resource, scope and every other key of the span as the JSON it came in.
:func:`span_document` gives a row back as an OTLP JSON span that decodes to
what the original did, so the rules can read the stored spans again.

Example:
    >>> line = (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c",'
    ...         b'"spanId":"b7ad6b7169203331","name":"run","startTimeUnixNano":"1000"}]}]}]}')
    >>> rows = SpanRows()
    >>> rows.add_line(line, 7)
    1
    >>> rows.table().column("start_ns").to_pylist()
    [1000]
"""

from __future__ import annotations

import base64
import functools
import re
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    import pyarrow as pa

from tracekit.intake.otlp.decode_json import (
    ERROR_CODES,
    Span,
    _get,
    _scope_lists,
    decode_spans,
)
from tracekit.intake.otlp.decode_json_fast import decode_spans_fast
from tracekit.intake.otlp.limits import check_limits, raw_text
from tracekit.validate import VALUE_DEPTH_REASON

__all__ = [
    "SPAN_FIELDS",
    "SPAN_NAMES",
    "SpanRows",
    "decode_line",
    "message_document",
    "rows_table",
    "span_document",
    "span_schema",
]

#: The columns of a batch of received spans, with their Arrow types (the store's
#: ``spans`` table adds where it came from). Named here without pyarrow: the
#: collector's decoding process makes rows and never imports it.
SPAN_FIELDS: Final = (
    ("line", "int64"),  # the source line (or spool entry) it was read from
    ("pos", "int32"),  # its place among the spans of that line
    ("trace_id", "string"),
    ("span_id", "string"),
    ("parent_span_id", "string"),
    ("name", "string"),
    ("kind", "int32"),
    ("start_ns", "int64"),
    ("end_ns", "int64"),
    ("status_code", "int32"),
    ("status_message", "string"),
    ("service", "string"),
    ("attributes", "string"),
    ("events", "string"),
    ("links", "string"),
    ("linked", "list<string>"),  # the traces its links name
    ("resource", "string"),
    ("scope", "string"),
    ("extra", "string"),  # every other key of the span, as received
)
SPAN_NAMES: Final = tuple(name for name, _ in SPAN_FIELDS)


@functools.cache
def span_schema() -> pa.Schema:
    """:data:`SPAN_FIELDS` as an Arrow schema."""
    import pyarrow as pa

    types = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.large_string()}
    types["list<string>"] = pa.list_(pa.large_string())
    return pa.schema([(name, types[kind]) for name, kind in SPAN_FIELDS])


def _array(values: list[Any], kind: str) -> pa.Array:
    """One column from buffers: pyarrow's list conversion would import pandas."""
    import numpy as np
    import pyarrow as pa

    from tracekit._util.arrow import strings

    if kind == "string":
        return strings(values)
    if kind == "list<string>":
        lengths = [len(v) if v else 0 for v in values]
        offsets = np.zeros(len(values) + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        flat = strings([x for v in values if v for x in v])
        mask = _validity([v is not None for v in values])
        return pa.ListArray.from_buffers(
            pa.list_(pa.large_string()),
            len(values),
            [mask, pa.py_buffer(offsets)],
            children=[flat],
        )
    dtype = np.int64 if kind == "int64" else np.int32
    data = np.array([0 if v is None else v for v in values], dtype=dtype)
    mask = _validity([v is not None for v in values])
    arrow = pa.int64() if kind == "int64" else pa.int32()
    return pa.Array.from_buffers(arrow, len(values), [mask, pa.py_buffer(data)])


def _validity(valid: list[bool]) -> Any:
    import numpy as np
    import pyarrow as pa

    if all(valid):
        return None
    return pa.py_buffer(np.packbits(np.array(valid, dtype=bool), bitorder="little"))


_OWN: Final = frozenset(
    {
        "traceId",
        "trace_id",
        "spanId",
        "span_id",
        "parentSpanId",
        "parent_span_id",
        "name",
        "kind",
        "startTimeUnixNano",
        "start_time_unix_nano",
        "endTimeUnixNano",
        "end_time_unix_nano",
        "status",
        "attributes",
        "events",
        "links",
    }
)
_OK_CODES: Final = frozenset({1, "1", "STATUS_CODE_OK", "OK"})
_KINDS: Final = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_encode = msgspec.json.Encoder().encode


def decode_line(data: bytes | str) -> tuple[dict[str, Any], list[Span]]:
    """One OTLP JSON document: the parsed object and its decoded spans, or the reason it is refused.

    Raises:
        msgspec.DecodeError: it is not JSON.
        ValueError: it is not OTLP traces, a span is malformed or a time is
            out of range (the words of :meth:`OtlpConverter.feed`).
    """
    try:
        doc = msgspec.json.decode(data)
    except RecursionError:
        raise ValueError(VALUE_DEPTH_REASON) from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    try:  # the typed decoder in C when it can, the same spans as the dict walk (tested)
        spans = decode_spans_fast(data if isinstance(data, bytes) else data.encode())
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
        spans = None
    if spans is not None and len(spans) != _raw_count(doc):
        spans = None  # a layout the typed decoder reads otherwise: the dict walk decides
    try:
        spans = decode_spans(doc) if spans is None else spans
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed OTLP ({type(exc).__name__}: {exc})") from None
    except RecursionError:
        raise ValueError(VALUE_DEPTH_REASON) from None
    return doc, spans


def _raw_count(doc: dict[str, Any]) -> int:
    try:
        return sum(
            len(scope.get("spans") or ())
            for resource_spans in _get(doc, "resourceSpans", "resource_spans") or ()
            for scope in _scope_lists(resource_spans)
        )
    except (AttributeError, TypeError):
        return -1


class SpanRows:
    """Received spans gathered column by column, then one Arrow table."""

    def __init__(self, *, check: bool = True) -> None:
        self._columns: dict[str, list[Any]] = {name: [] for name in SPAN_NAMES}
        # The limits at the door (:mod:`tracekit.intake.otlp.limits`): a span past
        # one is refused alone, ``(line, raw, reason)``, and the rest of its line kept.
        self._check = check
        self.refused: list[tuple[int, str, str]] = []

    def __len__(self) -> int:
        return len(self._columns["line"])

    def add_line(self, data: bytes | str, line: int) -> int:
        """Add the spans of one accepted line; returns how many.

        Raises:
            msgspec.DecodeError, ValueError: the line is refused (nothing of it is added).
        """
        doc, spans = decode_line(data)
        self.add(doc, spans, line)
        return len(spans)

    def take_line(self, data: bytes, line: int) -> list[Span]:
        """Add the spans of one accepted line; returns those added (within the limits).

        A line of the usual OTLP/JSON spelling is read without decoding its
        attributes, events and links to Python (they are kept as the JSON
        they came in, whitespace aside); any other goes through :meth:`add`.

        Raises:
            msgspec.DecodeError, ValueError: the line is refused (nothing of it is added).
        """
        shell = _shell(data)
        spans = None if shell is None else _fast_spans(data, shell)
        if shell is None or spans is None:
            doc, spans = decode_line(data)
            return self.add(doc, spans, line)
        return self._add_shell(shell, spans, line)

    def _add_shell(self, shell: _RawTraces, spans: list[Span], line: int) -> list[Span]:
        decoded = iter(spans)
        kept: list[Span] = []
        pos = 0
        for resource_spans in shell.resourceSpans or ():
            res_text = _text(resource_spans.resource)
            for scope_spans in resource_spans.scopeSpans or resource_spans.instrumentationLibrarySpans:
                scope_text = _text(scope_spans.scope) or _text(scope_spans.instrumentationLibrary)
                for raw in scope_spans.spans:
                    span = next(decoded)
                    reason = check_limits(span) if self._check else None
                    if reason is None:
                        self._add_raw(raw, span, line, pos, res_text, scope_text)
                        kept.append(span)
                    else:
                        self.refused.append((line, raw_text(span), reason))
                    pos += 1
        return kept

    def _add_raw(
        self,
        raw: _RawSpan,
        span: Span,
        line: int,
        pos: int,
        resource: str | None,
        scope: str | None,
    ) -> None:
        c = self._columns
        code = raw.status.code if raw.status is not None else None
        c["line"].append(line)
        c["pos"].append(pos)
        c["trace_id"].append(span.trace)
        c["span_id"].append(span.id)
        c["parent_span_id"].append(span.parent or None)
        c["name"].append(span.name)
        c["kind"].append(_kind(raw.kind))
        c["start_ns"].append(span.start)
        c["end_ns"].append(span.end)
        c["status_code"].append(2 if code in ERROR_CODES else 1 if code in _OK_CODES else 0)
        c["status_message"].append(span.message or None)
        c["service"].append(span.service)
        c["attributes"].append(_text(raw.attributes))
        c["events"].append(_text(raw.events))
        c["links"].append(_text(raw.links))
        c["linked"].append(sorted({t for t, _ in span.links if t and t != span.trace}) or None)
        c["resource"].append(resource)
        c["scope"].append(scope)
        c["extra"].append(_extra(raw))

    def add(self, doc: dict[str, Any], spans: list[Span], line: int) -> list[Span]:
        """Add a decoded document's spans (``spans``: :func:`decode_line`'s, in its order).

        Returns:
            The spans added (those within the limits), in their order.
        """
        decoded = iter(spans)
        kept: list[Span] = []
        pos = 0
        for resource_spans in _get(doc, "resourceSpans", "resource_spans") or ():
            resource = resource_spans.get("resource")
            res_text = _encode(resource).decode() if resource else None
            for scope_spans in _scope_lists(resource_spans):
                scope = scope_spans.get("scope") or _get(
                    scope_spans, "instrumentationLibrary", "instrumentation_library"
                )
                scope_text = _encode(scope).decode() if scope else None
                for raw in scope_spans.get("spans") or ():
                    span = next(decoded)
                    reason = check_limits(span) if self._check else None
                    if reason is None:
                        self._add(raw, span, line, pos, res_text, scope_text)
                        kept.append(span)
                    else:
                        self.refused.append((line, raw_text(span), reason))
                    pos += 1
        return kept

    def _add(
        self,
        raw: dict[str, Any],
        span: Span,
        line: int,
        pos: int,
        resource: str | None,
        scope: str | None,
    ) -> None:
        c = self._columns
        status = raw.get("status") or {}
        code = status.get("code")
        c["line"].append(line)
        c["pos"].append(pos)
        c["trace_id"].append(span.trace)
        c["span_id"].append(span.id)
        c["parent_span_id"].append(span.parent or None)
        c["name"].append(span.name)
        c["kind"].append(_kind(raw.get("kind")))
        c["start_ns"].append(span.start)
        c["end_ns"].append(span.end)
        c["status_code"].append(2 if code in ERROR_CODES else 1 if code in _OK_CODES else 0)
        c["status_message"].append(span.message or None)
        c["service"].append(span.service)
        c["attributes"].append(_json(raw.get("attributes")))
        c["events"].append(_json(raw.get("events")))
        c["links"].append(_json(raw.get("links")))
        c["linked"].append(sorted({t for t, _ in span.links if t and t != span.trace}) or None)
        c["resource"].append(resource)
        c["scope"].append(scope)
        extra = {k: v for k, v in raw.items() if k not in _OWN}
        c["extra"].append(_encode(extra).decode() if extra else None)

    def table(self) -> pa.Table:
        """The rows gathered so far, as a table of :func:`span_schema`."""
        import pyarrow as pa

        arrays = [_array(self._columns[name], kind) for name, kind in SPAN_FIELDS]
        return pa.Table.from_arrays(arrays, schema=span_schema())

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows gathered so far as tuples in :data:`SPAN_NAMES`' order (a spool keeps them)."""
        return list(zip(*(self._columns[name] for name in SPAN_NAMES), strict=True))


_NO_RAW: Final = msgspec.Raw(b"")
_EMPTY: Final = frozenset({b"", b"null", b"[]", b"{}", b'""', b"0", b"false"})
_SPACE: Final = re.compile(rb"[ \t\r\n]")


class _RawStatus(msgspec.Struct):
    code: Any = None
    message: Any = None


class _RawSpan(msgspec.Struct, forbid_unknown_fields=True):
    """A span of the usual spelling, its nested values left as JSON (any other key: the dict path)."""

    traceId: Any = None
    spanId: Any = None
    parentSpanId: Any = None
    name: Any = None
    kind: Any = None
    startTimeUnixNano: Any = None
    endTimeUnixNano: Any = None
    status: _RawStatus | None = None
    attributes: msgspec.Raw = _NO_RAW
    events: msgspec.Raw = _NO_RAW
    links: msgspec.Raw = _NO_RAW
    traceState: msgspec.Raw = _NO_RAW
    flags: msgspec.Raw = _NO_RAW
    droppedAttributesCount: msgspec.Raw = _NO_RAW
    droppedEventsCount: msgspec.Raw = _NO_RAW
    droppedLinksCount: msgspec.Raw = _NO_RAW


_EXTRA: Final = (
    "traceState",
    "flags",
    "droppedAttributesCount",
    "droppedEventsCount",
    "droppedLinksCount",
)


class _RawScope(msgspec.Struct, forbid_unknown_fields=True):
    scope: msgspec.Raw = _NO_RAW
    instrumentationLibrary: msgspec.Raw = _NO_RAW
    spans: list[_RawSpan] = []
    schemaUrl: Any = None


class _RawResource(msgspec.Struct, forbid_unknown_fields=True):
    resource: msgspec.Raw = _NO_RAW
    scopeSpans: list[_RawScope] = []
    instrumentationLibrarySpans: list[_RawScope] = []
    schemaUrl: Any = None


class _RawTraces(msgspec.Struct, forbid_unknown_fields=True):
    resourceSpans: list[_RawResource] | None = None


_SHELL: Final = msgspec.json.Decoder(_RawTraces)


def _shell(data: bytes) -> _RawTraces | None:
    """The line's structure with its nested values as JSON, or None: not the usual spelling."""
    try:
        return _SHELL.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def _fast_spans(data: bytes, shell: _RawTraces) -> list[Span] | None:
    """The typed decoder's spans, if it reads them all (else the dict path decides)."""
    try:
        spans = decode_spans_fast(data)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
        return None
    count = sum(
        len(scope.spans)
        for rs in shell.resourceSpans or ()
        for scope in rs.scopeSpans or rs.instrumentationLibrarySpans
    )
    return spans if len(spans) == count else None


def _text(raw: msgspec.Raw) -> str | None:
    """A nested value as compact JSON; None when absent or empty (as :func:`_json` has it)."""
    data = bytes(raw)
    if data in _EMPTY:
        return None
    if _SPACE.search(data):
        data = msgspec.json.format(data, indent=-1)
        if data in _EMPTY:
            return None
    return data.decode()


def _extra(raw: _RawSpan) -> str | None:
    parts = [
        f'"{key}":{text}' for key in _EXTRA if (text := _value(getattr(raw, key))) is not None
    ]
    return "{" + ",".join(parts) + "}" if parts else None


def _value(raw: msgspec.Raw) -> str | None:
    data = bytes(raw)
    if not data:
        return None
    return (msgspec.json.format(data, indent=-1) if _SPACE.search(data) else data).decode()


def rows_table(rows: list[tuple[Any, ...]], lines: list[int]) -> pa.Table:
    """Row tuples (:meth:`SpanRows.rows`) as a table, each at the given line (a spool offset).

    Example:
        >>> rows_table([], []).num_rows
        0
    """
    import pyarrow as pa

    schema = span_schema()
    columns: list[list[Any]] = [list(c) for c in zip(*rows, strict=True)] or [
        [] for _ in SPAN_NAMES
    ]
    columns[0] = lines
    columns[1] = list(range(len(rows))) if rows else []
    arrays = [_array(v, kind) for v, (_, kind) in zip(columns, SPAN_FIELDS, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


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


def _json(value: Any) -> str | None:
    return _encode(value).decode() if value else None


def _kind(value: Any) -> int | None:
    if isinstance(value, str):
        value = int(value) if value.isdigit() else _KINDS.get(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 31:
        return value
    return None


def span_document(row: dict[str, Any]) -> str:
    """A stored span (a row of :data:`SPAN_FIELDS`) as a ``resourceSpans`` entry of OTLP JSON.

    It decodes to the span that was received: the ids are the decoder's own
    hex, the other keys as they came.

    Example:
        >>> span_document({"trace_id": "ab", "span_id": "cd", "name": "x", "start_ns": 5})
        '{"scopeSpans":[{"spans":[{"traceId":"ab","spanId":"cd","name":"x","startTimeUnixNano":5}]}]}'
    """
    parts = [f'"traceId":"{row["trace_id"]}","spanId":"{row["span_id"]}"']
    if row.get("parent_span_id"):
        parts.append(f'"parentSpanId":"{row["parent_span_id"]}"')
    parts.append(f'"name":{_encode(row["name"]).decode()}')
    if row.get("kind") is not None:
        parts.append(f'"kind":{row["kind"]}')
    parts.append(f'"startTimeUnixNano":{row["start_ns"]}')
    if row.get("end_ns") is not None:
        parts.append(f'"endTimeUnixNano":{row["end_ns"]}')
    code, message = row.get("status_code") or 0, row.get("status_message")
    if code or message:
        text = f',"message":{_encode(message).decode()}' if message else ""
        parts.append(f'"status":{{"code":{code}{text}}}')
    for key in ("attributes", "events", "links"):
        if row.get(key):
            parts.append(f'"{key}":{row[key]}')
    extra = row.get("extra")
    if extra and len(extra) > 2:
        parts.append(extra[1:-1])
    span = "{" + ",".join(parts) + "}"
    scope = f'"scope":{row["scope"]},' if row.get("scope") else ""
    resource = f'"resource":{row["resource"]},' if row.get("resource") else ""
    return f'{{{resource}"scopeSpans":[{{{scope}"spans":[{span}]}}]}}'
