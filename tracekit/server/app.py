"""The server's ASGI application: OTLP/HTTP in, the ingest status out; the read side adds routes.

Example:
    >>> from pathlib import Path
    >>> app = create_app(ServeConfig(Path("served.duckdb")))
    >>> sorted(r.path for r in app.routes)
    ['/api/ingest', '/healthz', '/v1/records', '/v1/traces']
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tracekit.server.collector import Collector
from tracekit.server.config import ServeConfig
from tracekit.server.decode import (
    BadRequestError,
    TooLargeError,
    decode_otlp_json,
    decode_otlp_proto,
    decode_records,
    inflate,
    spans_entry,
)
from tracekit.server.responses import JSON, PROTOBUF, failure, success
from tracekit.server.spool import Entry, SpoolFullError

__all__ = ["create_app"]

_NDJSON: Final = frozenset({"application/x-ndjson", "application/jsonl", "application/json-lines"})
_OPEN: Final = frozenset({"/healthz"})
_RETRY_SECONDS: Final = 1
_DRAIN: Final = 64 << 20


def create_app(
    config: ServeConfig,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    collector: Collector | None = None,
    on_ready: Callable[[Collector], None] | None = None,
) -> Starlette:
    """The application: ``POST /v1/traces``, ``POST /v1/records``, ``GET /api/ingest``, ``GET /healthz``.

    Args:
        config: the server's settings.
        extra_routes: more routes (the read API); their handlers find the
            collector at ``request.app.state.collector`` (``read_cursor()``).
        collector: one already open (``tracekit serve`` opens it first, to
            report a locked store before listening); else opened at startup.
        on_ready: called once the collector runs (the server writes its sidecar).
    """
    gate = _Gate(config.max_inflight)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        opened = collector or Collector(config)
        app.state.collector = opened
        opened.start()
        if on_ready is not None:
            on_ready(opened)
        try:
            yield
        finally:
            await run_in_threadpool(opened.stop)

    async def traces(request: Request) -> Response:
        media = _media(request)
        if media not in (PROTOBUF, JSON):
            return failure(415, f"unsupported Content-Type {media!r:.60}; use {PROTOBUF} or {JSON}")
        return await _receive(request, media, gate, _otlp_decoder(media, config.max_body))

    async def records(request: Request) -> Response:
        if _media(request) not in _NDJSON:
            return failure(
                415, f"unsupported Content-Type {_media(request)!r:.60}; use application/x-ndjson"
            )
        return await _receive(request, JSON, gate, _records_decoder(config.max_body))

    async def ingest(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(_collector(request).ingest_status))

    async def healthz(request: Request) -> Response:
        failed = _collector(request).loader.failed
        if failed:
            return JSONResponse({"ok": False, "error": failed}, 503)
        return JSONResponse({"ok": True})

    routes: list[BaseRoute] = [
        Route("/v1/traces", traces, methods=["POST"]),
        Route("/v1/records", records, methods=["POST"]),
        Route("/api/ingest", ingest, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        *extra_routes,
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    if config.token:
        app.add_middleware(_TokenMiddleware, token=config.token)
    return app


def _collector(request: Request) -> Collector:
    found: Collector = request.app.state.collector
    return found


def _media(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


class _Gate:
    """How many requests are in flight; past the bound new ones get 429."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.inflight = 0


async def _receive(
    request: Request, media: str, gate: _Gate, decode: Callable[[bytes, str], Entry]
) -> Response:
    collector = _collector(request)
    if collector.loader.failed:
        return failure(
            503, "the store refused a write; see the server's log", media, _RETRY_SECONDS
        )
    if gate.inflight >= gate.bound:
        collector.busy_answers += 1
        return failure(429, "too many requests in flight", media, _RETRY_SECONDS)
    gate.inflight += 1
    try:
        body = await _read_body(request, collector.config.max_body)
        encoding = request.headers.get("content-encoding", "")
        entry = await run_in_threadpool(decode, body, encoding)
        accepted = await collector.submit(entry)
    except TooLargeError as exc:
        return failure(413, str(exc), media)
    except BadRequestError as exc:
        return failure(400, str(exc), media)
    except SpoolFullError as exc:
        collector.busy_answers += 1
        return failure(503, str(exc), media, _RETRY_SECONDS)
    finally:
        gate.inflight -= 1
    return success(media, accepted.refused, accepted.message)


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, at most ``limit`` bytes.

    Past the limit the rest is read and dropped (up to a bound), so that the
    client, still sending, gets the 413 rather than a reset connection.
    """
    parts: list[bytes] = []
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > limit + _DRAIN:
            break
        if size <= limit:
            parts.append(piece)
    if size > limit:
        raise TooLargeError(f"the body is over {limit} bytes")
    return b"".join(parts)


def _otlp_decoder(media: str, limit: int) -> Callable[[bytes, str], Entry]:
    decode_spans = decode_otlp_proto if media == PROTOBUF else decode_otlp_json

    def decode(body: bytes, encoding: str) -> Entry:
        return spans_entry(decode_spans(inflate(body, encoding, limit)), "serve:otlp")

    return decode


def _records_decoder(limit: int) -> Callable[[bytes, str], Entry]:
    def decode(body: bytes, encoding: str) -> Entry:
        return decode_records(inflate(body, encoding, limit))

    return decode


class _TokenMiddleware:
    """401 for a request without ``Authorization: Bearer TOKEN`` (``/healthz`` is open)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] not in _OPEN:
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = failure(401, "missing or wrong bearer token")
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
