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

import functools
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa

from tracekit.intake.otlp.decode_json import (
    ERROR_CODES,
    Span,
    _get,
    _scope_lists,
    decode_spans,
)
from tracekit.intake.otlp.decode_json_fast import decode_spans_fast
from tracekit.intake.otlp.decode_proto import message_document
from tracekit.intake.otlp.limits import check_limits, raw_text
from tracekit.intake.otlp.shell import RawTraces, extra_text, json_text, read_line
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
    """Received spans gathered row by row, then one Arrow table."""

    def __init__(self, *, check: bool = True) -> None:
        self._rows: list[tuple[Any, ...]] = []  # in SPAN_NAMES' order
        # The limits at the door (:mod:`tracekit.intake.otlp.limits`): a span past
        # one is refused alone, ``(line, raw, reason)``, and the rest of its line kept.
        self._check = check
        self.refused: list[tuple[int, str, str]] = []

    def __len__(self) -> int:
        return len(self._rows)

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

        A line of the usual OTLP/JSON spelling is read once
        (:func:`~tracekit.intake.otlp.shell.read_line`): its attributes,
        events, links, resource and scope are kept as the JSON they came in
        (whitespace aside) and decoded for the rules from that JSON; any other
        goes through :meth:`add`.

        Raises:
            msgspec.DecodeError, ValueError: the line is refused (nothing of it is added).
        """
        read = read_line(data)
        if read is None:
            doc, spans = decode_line(data)
            return self.add(doc, spans, line)
        return self._keep(_shell_raws(read[0]), read[1], line)

    def add(self, doc: dict[str, Any], spans: list[Span], line: int) -> list[Span]:
        """Add a decoded document's spans (``spans``: :func:`decode_line`'s, in its order).

        Returns:
            The spans added (those within the limits), in their order.
        """
        return self._keep(_dict_raws(doc), spans, line)

    def _keep(self, raws: Iterator[_Raw], spans: list[Span], line: int) -> list[Span]:
        """Each span within the limits as a row, each other refused; the kept, in order."""
        kept: list[Span] = []
        for pos, (raw, span) in enumerate(zip(raws, spans, strict=True)):
            reason = check_limits(span) if self._check else None
            if reason is None:
                self._add(raw, span, line, pos)
                kept.append(span)
            else:
                self.refused.append((line, raw_text(span), reason))
        return kept

    def _add(self, raw: _Raw, span: Span, line: int, pos: int) -> None:
        kind, code, attributes, events, links, extra, resource, scope = raw
        linked = sorted({t for t, _ in span.links if t and t != span.trace}) if span.links else ()
        self._rows.append((
            line, pos, span.trace, span.id, span.parent or None, span.name, _kind(kind),
            span.start, span.end, 2 if code in ERROR_CODES else 1 if code in _OK_CODES else 0,
            span.message or None, span.service, attributes, events, links, linked or None,
            resource, scope, extra,
        ))  # fmt: skip

    def table(self) -> pa.Table:
        """The rows gathered so far, as a table of :func:`span_schema`."""
        return rows_table(self._rows)

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows gathered so far as tuples in :data:`SPAN_NAMES`' order (a spool keeps them)."""
        return list(self._rows)


def rows_table(rows: list[tuple[Any, ...]], lines: list[int] | None = None) -> pa.Table:
    """Row tuples (:meth:`SpanRows.rows`) as a table; ``lines``: each at that line (a spool offset).

    Example:
        >>> rows_table([], []).num_rows
        0
    """
    import pyarrow as pa

    schema = span_schema()
    columns: list[list[Any]] = [list(c) for c in zip(*rows, strict=True)] or [
        [] for _ in SPAN_NAMES
    ]
    if lines is not None:
        columns[0] = lines
        columns[1] = list(range(len(rows))) if rows else []
    arrays = [_array(v, kind) for v, (_, kind) in zip(columns, SPAN_FIELDS, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


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


#: What a span's row keeps of it as received, whichever way its line was read: its kind
#: and status code as they came, then attributes, events, links, every other key,
#: resource and scope as JSON text.
_Raw = tuple[
    Any, Any, "str | None", "str | None", "str | None", "str | None", "str | None", "str | None"
]


def _shell_raws(shell: RawTraces) -> Iterator[_Raw]:
    """A shell-read line's spans, in order: their JSON kept as it came in."""
    for resource_spans in shell.resourceSpans or ():
        resource = json_text(resource_spans.resource)
        for scope_spans in resource_spans.scopeSpans or resource_spans.instrumentationLibrarySpans:
            scope = json_text(scope_spans.scope) or json_text(scope_spans.instrumentationLibrary)
            for raw in scope_spans.spans:
                code = raw.status.code if raw.status is not None else None
                yield (
                    raw.kind, code, json_text(raw.attributes), json_text(raw.events),
                    json_text(raw.links), extra_text(raw), resource, scope,
                )  # fmt: skip


def _dict_raws(doc: dict[str, Any]) -> Iterator[_Raw]:
    """A decoded document's spans, in order: their JSON encoded again from the dicts."""
    for resource_spans in _get(doc, "resourceSpans", "resource_spans") or ():
        found = resource_spans.get("resource")
        resource = _encode(found).decode() if found else None
        for scope_spans in _scope_lists(resource_spans):
            held = scope_spans.get("scope") or _get(
                scope_spans, "instrumentationLibrary", "instrumentation_library"
            )
            scope = _encode(held).decode() if held else None
            for raw in scope_spans.get("spans") or ():
                extra = {k: v for k, v in raw.items() if k not in _OWN}
                yield (
                    raw.get("kind"), (raw.get("status") or {}).get("code"),
                    _json(raw.get("attributes")), _json(raw.get("events")),
                    _json(raw.get("links")), _encode(extra).decode() if extra else None,
                    resource, scope,
                )  # fmt: skip
