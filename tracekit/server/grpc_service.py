"""OTLP/gRPC (``TraceService/Export``) through grpcio, on its own port and threads.

It shares the spool with the HTTP side, so a gRPC batch is as durable as an
HTTP one before it is acknowledged; the HTTP event loop never waits for it.
A full spool is ``UNAVAILABLE`` (the exporters retry it), a malformed span
is ``INVALID_ARGUMENT``, a missing token ``UNAUTHENTICATED``.
"""

from __future__ import annotations

import hmac
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tracekit.server.collector import Collector
from tracekit.server.config import ServeConfig, ServeError
from tracekit.server.decode import received_message, spans_entry
from tracekit.server.spool import SpoolFullError

__all__ = ["start_grpc"]


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, collector: Collector, token: str | None) -> None:
        self.collector = collector
        self.expected = token

    def Export(self, request: Any, context: Any) -> Any:
        if self.expected is not None:
            given = str(dict(context.invocation_metadata()).get("authorization", ""))
            scheme, _, credentials = given.strip().partition(" ")  # the scheme: any case
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credentials.strip().encode(), self.expected.encode()
            ):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            entry = spans_entry(received_message(request), "serve:otlp")
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc)[:300])
        try:
            accepted = self.collector.submit_blocking(entry, timeout=60)
        except (SpoolFullError, futures.TimeoutError) as exc:
            self.collector.busy_answers += 1
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc) or "the spool is busy")
        reply = trace_service_pb2.ExportTraceServiceResponse()
        if accepted.refused:
            reply.partial_success.rejected_spans = accepted.refused
            reply.partial_success.error_message = accepted.message
        return reply


def start_grpc(collector: Collector, config: ServeConfig) -> tuple[grpc.Server, int]:
    """Start the gRPC server on ``config.grpc_port`` (same host); return it and its port.

    The caller stops it.

    Raises:
        ServeError: the port cannot be bound.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="tracekit-grpc"),
        options=[("grpc.max_receive_message_length", config.max_body)],
        maximum_concurrent_rpcs=config.max_inflight,
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
        _TraceService(collector, config.token), server
    )
    host = f"[{config.host}]" if ":" in config.host else config.host
    try:
        bound = server.add_insecure_port(f"{host}:{config.grpc_port}")
    except RuntimeError as exc:
        raise ServeError(f"cannot listen for gRPC on port {config.grpc_port} ({exc})") from None
    if not bound:
        raise ServeError(f"cannot listen for gRPC on port {config.grpc_port}")
    server.start()
    return server, bound
