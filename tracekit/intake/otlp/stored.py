"""Received span rows read back as the decoder's spans, without a JSON document in between.

A row of :data:`~tracekit.intake.otlp.received.SPAN_NAMES` (a span as the
store or a collector's spool keeps it) holds the ids, times, status and
service as columns and the attributes, events and links as the OTLP JSON they
came in. :func:`row_span` decodes only those three texts, into the typed
decoder's own structs (:mod:`tracekit.intake.otlp.decode_json_fast`), and
builds the span the decoder builds. A row the typed structs cannot take
(another spelling, a value out of range) is decoded the long way: its
:func:`~tracekit.intake.otlp.received.span_document` through
:func:`~tracekit.intake.otlp.convert.json_spans`, which words what is wrong.

Example:
    >>> row = dict.fromkeys(SPAN_NAMES)
    >>> row.update(trace_id="ab" * 16, span_id="cd" * 8, name="run", start_ns=5, end_ns=9)
    >>> span = row_span(tuple(row.values()))
    >>> span.name, span.start, span.end, span.parent
    ('run', 5, 9, '')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from tracekit.intake.otlp.convert import json_spans
from tracekit.intake.otlp.decode_json_fast import (
    Ids,
    _Event,
    _KeyValue,
    _Link,
    _Span,
    _span,
    _Status,
)
from tracekit.intake.otlp.decoded import Span
from tracekit.intake.otlp.received import SPAN_NAMES, span_document

__all__ = ["row_span", "row_spans"]

_AT: Final = {name: i for i, name in enumerate(SPAN_NAMES)}
_TRACE, _ID, _PARENT, _NAME = _AT["trace_id"], _AT["span_id"], _AT["parent_span_id"], _AT["name"]
_START, _END, _CODE, _MESSAGE = (
    _AT["start_ns"],
    _AT["end_ns"],
    _AT["status_code"],
    _AT["status_message"],
)
_SERVICE, _ATTRS, _EVENTS, _LINKS = _AT["service"], _AT["attributes"], _AT["events"], _AT["links"]
_KEYS: Final = msgspec.json.Decoder(list[_KeyValue])
_EVENT_LIST: Final = msgspec.json.Decoder(list[_Event])
_LINK_LIST: Final = msgspec.json.Decoder(list[_Link])


def row_span(row: Sequence[Any], ids: Ids | None = None) -> Span:
    """The span a received row decodes to (a tuple in ``SPAN_NAMES`` order).

    Raises:
        ValueError: the row is not a span the decoder would take (its words).
    """
    try:
        return _typed(row, Ids() if ids is None else ids)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError, RecursionError):
        pass
    document = '{"resourceSpans":[' + span_document(dict(zip(SPAN_NAMES, row, strict=True))) + "]}"
    spans = json_spans(document.encode())
    if len(spans) != 1:
        raise ValueError(f"a stored span reads as {len(spans)} spans")
    return spans[0]


def row_spans(rows: Sequence[Sequence[Any]]) -> list[Span]:
    """The spans of these rows, in their order (ids that repeat converted once).

    Example:
        >>> row_spans([])
        []
    """
    ids = Ids()
    return [row_span(row, ids) for row in rows]


def _typed(row: Sequence[Any], ids: Ids) -> Span:
    attributes, events, links = row[_ATTRS], row[_EVENTS], row[_LINKS]
    code, message = row[_CODE], row[_MESSAGE]
    trace, span, name = row[_TRACE], row[_ID], row[_NAME]
    if type(trace) is not str or type(span) is not str or type(name) is not str:
        raise ValueError("not the decoder's ids and name")  # the long way words it
    raw = _Span(
        spanId=span,
        traceId=trace,
        parentSpanId=row[_PARENT] or "",
        name=name,
        startTimeUnixNano=row[_START],
        endTimeUnixNano=row[_END],
        attributes=_KEYS.decode(attributes) if attributes else [],
        status=_status(code, message),
        events=_EVENT_LIST.decode(events) if events else [],
        links=_LINK_LIST.decode(links) if links else [],
    )
    return _span(raw, row[_SERVICE], ids)


def _status(code: Any, message: Any) -> _Status | None:
    if not code and not message:
        return None
    return _Status(code=code or 0, message=message or None)
