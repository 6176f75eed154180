"""Request bodies to spool entries: OTLP JSON or protobuf spans, v1 lines; the limits on both.

Runs off the event loop (in a worker thread): decompression and decoding
take CPU. A body is refused whole when it cannot be read at all (400); a
span that cannot be kept is refused alone and counted in the response's
``partial_success`` (and kept in the store's ``rejects``).
"""

from __future__ import annotations

import zlib
from typing import Any, Final

import msgspec

from tracekit.events import MAX_LINE_BYTES
from tracekit.intake.otlp.decode_json import Span, check_span
from tracekit.server.spool import Entry

__all__ = [
    "BadRequestError",
    "TooLargeError",
    "decode_otlp_json",
    "decode_otlp_proto",
    "decode_records",
    "inflate",
    "span_of",
    "spans_entry",
]

_PIECE: Final = 64 << 10


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
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib, by its header
    out: list[bytes] = []
    size = 0
    data = body
    try:
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
    except zlib.error as exc:
        raise BadRequestError(f"the body is not valid {encoding} ({exc})") from None
    return b"".join(out)


def span_of(row: tuple[Any, ...]) -> Span:
    """A span back from its spool tuple."""
    return Span(*row)


def _row(span: Span) -> tuple[Any, ...]:
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
    )


def spans_entry(spans: list[Span], source: str) -> Entry:
    """An entry of the spans that can be kept; each refused one a reject with its reason."""
    rows: list[tuple[Any, ...]] = []
    rejects: list[tuple[str, str]] = []
    for span in spans:
        try:
            check_span(span)
        except ValueError as exc:
            text = msgspec.json.encode(
                {"traceId": span.trace, "spanId": span.id, "name": span.name[:200]}
            ).decode()
            rejects.append((text, str(exc)))
            continue
        rows.append(_row(span))
    return Entry(source=source, spans=rows, rejects=rejects)


def decode_otlp_json(body: bytes) -> list[Span]:
    """The spans of an OTLP/JSON ``ExportTraceServiceRequest``.

    Raises:
        BadRequestError: not JSON, not OTLP traces, or a span is malformed.
    """
    from tracekit.intake.otlp.decode_json import decode_spans
    from tracekit.intake.otlp.decode_json_fast import decode_spans_fast

    try:
        return decode_spans_fast(body)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
        pass
    try:
        doc = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise BadRequestError(f"not JSON ({_short(exc)})") from None
    if not isinstance(doc, dict):
        raise BadRequestError("not a JSON object")
    try:
        return decode_spans(doc)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BadRequestError(f"malformed OTLP ({_short(exc)})") from None
    except RecursionError:
        raise BadRequestError("malformed OTLP (values nest too deep)") from None


def decode_otlp_proto(body: bytes) -> list[Span]:
    """The spans of a protobuf ``ExportTraceServiceRequest``.

    Raises:
        BadRequestError: not such a message, or a span is malformed.
    """
    from tracekit.intake.otlp.decode_proto import decode_spans_proto

    try:
        return decode_spans_proto(body)
    except ValueError as exc:
        raise BadRequestError(_short(exc)) from None


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
