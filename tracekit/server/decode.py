"""Request bodies to spool entries: OTLP JSON or protobuf spans, v1 lines; the limits on both.

Runs off the event loop (in a worker thread): decompression and decoding
take CPU. A body is refused whole when it cannot be read at all (400); a
span that cannot be kept is refused alone and counted in the response's
``partial_success`` (and kept in the store's ``rejects``).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, Final

import msgspec

from tracekit.events import MAX_LINE_BYTES
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.limits import check_limits, raw_text
from tracekit.server.spool import Entry

__all__ = [
    "BadRequestError",
    "TooLargeError",
    "check_ids",
    "decode_otlp_json",
    "decode_otlp_proto",
    "decode_records",
    "inflate",
    "received_message",
    "received_otlp_json",
    "received_otlp_proto",
    "span_of",
    "spans_entries",
    "spans_entry",
]

_PIECE: Final = 64 << 10
_HEX: Final = re.compile(r"[0-9a-f]+")


class BadRequestError(ValueError):
    """The body cannot be read: 400, with this message."""


class TooLargeError(ValueError):
    """The body is over the limit, before or after decompression: 413."""


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """The body, decompressed if ``encoding`` says gzip (or deflate), never over ``limit``.

    Inflates a piece at a time and stops as soon as the output passes the
    limit, so a gzip bomb costs at most ``limit`` bytes of memory.

    Raises:
        TooLargeError: the decompressed body is over ``limit``.
        BadRequestError: an unknown encoding, or the data is not gzip.

    Example:
        >>> import gzip
        >>> inflate(gzip.compress(b"{}"), "gzip", 100)
        b'{}'
    """
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise BadRequestError(f"unsupported Content-Encoding {encoding!r:.40}")
    out: list[bytes] = []
    data = body
    try:
        # A gzip stream may hold several members (``cat a.gz b.gz``): each is
        # inflated in turn, and the limit counts all of them.
        while data:
            data = _inflate_member(data, out, limit)
            if data.strip(b"\0") == b"":  # zero padding after the last member
                break
    except zlib.error as exc:
        raise BadRequestError(f"the body is not valid {encoding} ({exc})") from None
    return b"".join(out)


def _inflate_member(data: bytes, out: list[bytes], limit: int) -> bytes:
    """Inflate one gzip member (or zlib stream) into ``out``; return the bytes after it."""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib, by its header
    size = sum(len(piece) for piece in out)
    while data:
        piece = inflater.decompress(data, _PIECE)
        size += len(piece)
        if size > limit:
            raise TooLargeError(f"the body inflates to more than {limit} bytes")
        out.append(piece)
        data = inflater.unconsumed_tail
        if inflater.eof:
            break
    if not inflater.eof:
        raise BadRequestError("the gzip body is cut short")
    return inflater.unused_data


def span_of(row: tuple[Any, ...]) -> Span:
    """A span back from its spool tuple (:func:`spans_entry`).

    An entry spooled by an older server holds only the first eleven fields:
    the rest keep their defaults. msgpack gives the links back as lists.

    Example:
        >>> span = Span("ab" * 16, "cd" * 8, "", "x", 1, 2, {}, False, "", None,
        ...             links=(("ef" * 16, "01" * 8),), transfer=True)
        >>> span_of(list(_row(span))) == span
        True
    """
    span = Span(*row)
    if span.links:
        span.links = tuple((trace, id_) for trace, id_ in span.links)
    return span


def legacy_row(row: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """A span spooled by an older server (its decoded fields only) as a received row.

    Such a spool kept only what the mapping read: that is all there is to store.
    """
    from tracekit.intake.otlp.decode_json import _CHAINED
    from tracekit.intake.otlp.received import SpanRows

    span = span_of(tuple(row))
    raw: dict[str, Any] = {
        "traceId": span.trace,
        "spanId": span.id,
        "parentSpanId": span.parent,
        "name": span.name,
        "startTimeUnixNano": span.start,
        "endTimeUnixNano": span.end,
        "status": {"code": 2 if span.error else 0, "message": span.message},
        "attributes": [{"key": k, "value": _any_value(v)} for k, v in span.attrs.items()],
        "links": [{"traceId": t, "spanId": i} for t, i in span.links],
    }
    if span.exception:
        said = {"exception.type": span.exception, "exception.message": span.exception_message}
        if span.exception_cause:
            said["exception.stacktrace"] = f"{span.exception_cause}\n{_CHAINED[0]}\n"
        attributes = [{"key": k, "value": {"stringValue": v}} for k, v in said.items() if v]
        raw["events"] = [{"name": "exception", "attributes": attributes}]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": span.service}}]}
    doc = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [raw]}]}]}
    rows = SpanRows(check=False)  # checked at its own door when it was spooled
    rows.add_line(msgspec.json.encode(doc), 0)
    return rows.rows()[0]


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    if isinstance(value, dict):
        values = [{"key": k, "value": _any_value(v)} for k, v in value.items()]
        return {"kvlistValue": {"values": values}}
    return {"stringValue": str(value)}


def _row(span: Span) -> tuple[Any, ...]:
    # Every field, in Span's order: new fields go at the end, so a spool
    # written before them still reads back (with their defaults).
    return (
        span.trace,
        span.id,
        span.parent,
        span.name,
        span.start,
        span.end,
        span.attrs,
        span.error,
        span.message,
        span.service,
        span.exception,
        span.line,
        span.links,
        span.target,
        span.transfer,
        span.exception_message,
        span.exception_cause,
        span.unreadable,
    )


#: Spans in one spool entry at most: a big body is spooled as several entries, so
#: that the loader and the quarantine each hold a slice of it at a time.
SLICE: Final = 10_000


def spans_entries(
    received: tuple[dict[str, Any], list[Span]], source: str, size: int = SLICE
) -> Iterator[Entry]:
    """:func:`spans_entry` of each slice of ``size`` spans (one entry for none).

    Example:
        >>> doc, spans = received_otlp_json(
        ...     b'{"resourceSpans": [{"scopeSpans": [{"spans": ['
        ...     + b",".join(b'{"traceId": "%s", "spanId": "%s", "name": "x",'
        ...                 b' "startTimeUnixNano": "1", "endTimeUnixNano": "2"}'
        ...                 % (b"ab" * 16, b"%016x" % (i + 1)) for i in range(5))
        ...     + b"]}]}]}")
        >>> [len(e.spans) for e in spans_entries((doc, spans), "serve:otlp", size=2)]
        [2, 2, 1]
    """
    doc, spans = received
    rows = _received_rows(doc, spans)
    for start in range(0, max(len(spans), 1), size):
        piece = zip(spans[start : start + size], rows[start : start + size], strict=True)
        yield _entry(piece, source)


def spans_entry(received: tuple[dict[str, Any], list[Span]], source: str) -> Entry:
    """An entry of the spans that can be kept, as received; each refused one a reject with its reason.

    ``received`` is a decoded document and its spans (:func:`received_otlp_json`).
    The spool keeps each span whole (:class:`~tracekit.intake.otlp.received.SpanRows`'
    row tuples): the store derives from what it was sent.
    """
    doc, spans = received
    return _entry(zip(spans, _received_rows(doc, spans), strict=True), source)


def _received_rows(doc: dict[str, Any], spans: list[Span]) -> list[tuple[Any, ...]]:
    from tracekit.intake.otlp.received import SpanRows

    gathered = SpanRows(check=False)  # every row, beside its span: checked in _entry
    gathered.add(doc, spans, 0)
    return gathered.rows()


def _entry(pairs: Iterable[tuple[Span, tuple[Any, ...]]], source: str) -> Entry:
    """The rows whose spans pass the ids and the limits at the door; the others refused."""
    rows: list[tuple[Any, ...]] = []
    rejects: list[tuple[str, str]] = []
    for span, row in pairs:
        try:
            check_ids(span)
            reason = check_limits(span)
        except ValueError as exc:
            reason = str(exc)
        if reason is not None:
            rejects.append((raw_text(span), reason))
            continue
        rows.append(row)
    return Entry(source=source, spans=rows, rejects=rejects)


def check_ids(span: Span) -> None:
    """Refuse ids OTLP does not allow: a trace id is 16 bytes, a span id 8, neither all zero.

    A span with an empty or short trace id would otherwise be merged with every
    other such span, whichever exporter sent it.

    Raises:
        ValueError: an id of the wrong length, not hex, or all zero.

    Example:
        >>> check_ids(Span("ab" * 16, "00" * 8, "", "x", 1, 2, {}, False, "", None))
        Traceback (most recent call last):
        ...
        ValueError: span id '0000000000000000' is all zero
    """
    _check_id("trace id", span.trace, 32)
    _check_id("span id", span.id, 16)
    if span.parent:
        _check_id("parent span id", span.parent, 16)


def _check_id(what: str, value: str, digits: int) -> None:
    if len(value) != digits or not _HEX.fullmatch(value):
        raise ValueError(f"{what} {value[:40]!r} is not {digits // 2} bytes")
    if value.strip("0") == "":
        raise ValueError(f"{what} {value!r} is all zero")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        keys = [k for k, _ in pairs]
        twice = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise BadRequestError(f"the key {twice[:60]!r} appears twice in one object")
    return found


def _refuse_duplicate_keys(body: bytes) -> None:
    """400 for a JSON body with a key twice in one object (decoders keep only one of them)."""
    try:
        json.loads(body, object_pairs_hook=_unique_keys)
    except BadRequestError:
        raise
    except (ValueError, RecursionError):
        pass  # not JSON: the decoders below say why


def decode_otlp_json(body: bytes) -> list[Span]:
    """The spans of an OTLP/JSON ``ExportTraceServiceRequest``.

    Raises:
        BadRequestError: not JSON, not OTLP traces, or a span is malformed.
    """
    return received_otlp_json(body)[1]


def received_otlp_json(body: bytes) -> tuple[dict[str, Any], list[Span]]:
    """An OTLP/JSON ``ExportTraceServiceRequest``: the document and its decoded spans.

    Raises:
        BadRequestError: not JSON, not OTLP traces, or a span is malformed.
    """
    _refuse_duplicate_keys(body)
    try:
        doc = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise BadRequestError(f"not JSON ({_short(exc)})") from None
    return _received(doc)


def _received(doc: Any) -> tuple[dict[str, Any], list[Span]]:
    from tracekit.intake.otlp.decode_json import decode_spans

    if not isinstance(doc, dict):
        raise BadRequestError("not a JSON object")
    try:
        return doc, decode_spans(doc)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BadRequestError(f"malformed OTLP ({_short(exc)})") from None
    except RecursionError:
        raise BadRequestError("malformed OTLP (values nest too deep)") from None


def decode_otlp_proto(body: bytes) -> list[Span]:
    """The spans of a protobuf ``ExportTraceServiceRequest``.

    Raises:
        BadRequestError: not such a message, or a span is malformed.
    """
    return received_otlp_proto(body)[1]


def received_otlp_proto(body: bytes) -> tuple[dict[str, Any], list[Span]]:
    """A protobuf ``ExportTraceServiceRequest`` read as the OTLP JSON it stands for, and its spans.

    Raises:
        BadRequestError: not such a message, or a span is malformed.
    """
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    try:
        message = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, ValueError, RecursionError) as exc:
        raise BadRequestError(f"not an OTLP protobuf message ({_short(exc)})") from None
    return received_message(message)


def received_message(message: Any) -> tuple[dict[str, Any], list[Span]]:
    """A decoded ``ExportTraceServiceRequest`` (gRPC's) as its OTLP JSON and spans.

    Raises:
        BadRequestError: a span is malformed.
    """
    from tracekit.intake.otlp.received import message_document

    try:
        doc = message_document(message)
    except RecursionError:
        raise BadRequestError("malformed OTLP (values nest too deep)") from None
    return _received(doc)


def decode_records(body: bytes) -> Entry:
    """v1 JSON lines as an entry; the store's load checks each (a bad one is rejected there).

    Raises:
        BadRequestError: a line is longer than a record may be.
    """
    lines = [line for line in body.split(b"\n") if line.strip()]
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_BYTES:
            raise BadRequestError(f"line {number} is longer than {MAX_LINE_BYTES} bytes")
    return Entry(source="serve:records", lines=lines)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
