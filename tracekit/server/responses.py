"""OTLP/HTTP responses, encoded like the request: ``ExportTraceServiceResponse`` and ``Status``.

A success is 200 with an ``ExportTraceServiceResponse`` (its
``partial_success`` names the spans refused); a failure carries a
``google.rpc.Status`` with the message. Retryable failures (429, 503) say
when to come back in ``Retry-After``.
"""

from __future__ import annotations

from typing import Final

import msgspec
from starlette.responses import Response

__all__ = ["JSON", "PROTOBUF", "failure", "success"]

PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
_GRPC_CODES: Final = {400: 3, 401: 16, 403: 7, 408: 4, 413: 3, 415: 3, 421: 7, 429: 8, 503: 14}


def success(media: str, rejected: int = 0, message: str = "") -> Response:
    """200 with an ``ExportTraceServiceResponse``, in the request's encoding.

    Example:
        >>> success(JSON, 2, "bad times").body
        b'{"partialSuccess":{"rejectedSpans":"2","errorMessage":"bad times"}}'
    """
    if media == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        reply = ExportTraceServiceResponse()
        if rejected:
            reply.partial_success.rejected_spans = rejected
            reply.partial_success.error_message = message
        return Response(reply.SerializeToString(), 200, media_type=PROTOBUF)
    body: dict[str, object] = {}
    if rejected:
        body["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
    return Response(msgspec.json.encode(body), 200, media_type=JSON)


def failure(
    status: int, message: str, media: str = JSON, retry_after: int | None = None
) -> Response:
    """A failure with a ``google.rpc.Status`` body; ``retry_after`` seconds for 429/503.

    Example:
        >>> r = failure(503, "the spool is full", retry_after=2)
        >>> r.status_code, r.headers["retry-after"], r.body
        (503, '2', b'{"code":14,"message":"the spool is full"}')
    """
    code = _GRPC_CODES.get(status, 2)
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    if media == PROTOBUF:
        return Response(_status_proto(code, message), status, headers, media_type=PROTOBUF)
    body = msgspec.json.encode({"code": code, "message": message})
    return Response(body, status, headers, media_type=JSON)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _status_proto(code: int, message: str) -> bytes:
    """``google.rpc.Status{code, message}`` by hand: two fields, no extra dependency."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text
