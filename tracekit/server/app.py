"""The server's ASGI application: OTLP/HTTP in, the ingest status out; the read side adds routes.

Example:
    >>> from pathlib import Path
    >>> app = create_app(ServeConfig(Path("served.duckdb")))
    >>> sorted(r.path for r in app.routes)
    ['/api/ingest', '/healthz', '/v1/records', '/v1/traces']
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tracekit.errors import TracekitError
from tracekit.server.body import (
    BodyBudget,
    BodyLimits,
    BudgetError,
    ClientGoneError,
    SlowBodyError,
    read_body,
)
from tracekit.server.collector import Accepted, Collector
from tracekit.server.config import ServeConfig, store_id
from tracekit.server.decode import (
    BadRequestError,
    TooLargeError,
    decode_records,
    inflate,
)
from tracekit.server.decode_pool import DecodePool, DecodeUnavailableError
from tracekit.server.guard import HostGuard, allowed_hosts
from tracekit.server.health import child_trouble
from tracekit.server.memory import MemoryGuard
from tracekit.server.responses import JSON, PROTOBUF, failure, success
from tracekit.server.spool import Entry, SpoolFullError
from tracekit.server.workers import ReadsBusyError, Workers

__all__ = ["create_app"]

log = logging.getLogger("tracekit.server")

_NDJSON: Final = frozenset({"application/x-ndjson", "application/jsonl", "application/json-lines"})
_OPEN: Final = frozenset({"/healthz"})
_RETRY_SECONDS: Final = 1
#: Seconds between status lines while data comes in.
_STATUS_EVERY: Final = 5.0


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
    gate = _Gate(config.max_inflight, config)
    workers = Workers(config.max_reads)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        opened = collector or Collector(config)
        app.state.collector = opened
        app.state.workers = workers
        app.state.gate = gate
        app.state.memory = MemoryGuard(config.memory_cap)
        opened.start()
        app.state.decoder = DecodePool(deadline=config.decode_deadline)
        await asyncio.get_running_loop().run_in_executor(None, _warm)
        if on_ready is not None:
            on_ready(opened)
        status = asyncio.create_task(_status_lines(opened))
        try:
            yield
        finally:
            status.cancel()
            await asyncio.get_running_loop().run_in_executor(None, app.state.decoder.close)
            await asyncio.get_running_loop().run_in_executor(None, opened.stop)
            workers.close()

    async def traces(request: Request) -> Response:
        media = _media(request)
        if media not in (PROTOBUF, JSON):
            return failure(415, f"unsupported Content-Type {media!r:.60}; use {PROTOBUF} or {JSON}")
        kind = "protobuf" if media == PROTOBUF else "json"

        async def store(body: bytes, encoding: str) -> Accepted:
            decoder: DecodePool = request.app.state.decoder
            decoded = await decoder.decode(kind, body, encoding, config.max_body)
            return await _collector(request).submit_decoded(decoded)

        return await _receive(request, media, gate, store)

    async def records(request: Request) -> Response:
        if _media(request) not in _NDJSON:
            return failure(
                415, f"unsupported Content-Type {_media(request)!r:.60}; use application/x-ndjson"
            )
        decode = _records_decoder(config.max_body)

        async def store(body: bytes, encoding: str) -> Accepted:
            collector = _collector(request)
            entry = await workers.ingest(collector.timed_decode, decode, body, encoding)
            return await collector.submit(entry)

        return await _receive(request, JSON, gate, store)

    async def ingest(request: Request) -> Response:
        try:
            return JSONResponse(await workers.read(_collector(request).ingest_status))
        except ReadsBusyError as exc:
            return failure(429, str(exc), JSON, _RETRY_SECONDS)
        except TracekitError as exc:  # the store refuses writes: not readable until reopened
            return JSONResponse({"error": str(exc), "hint": exc.hint}, 503)

    async def healthz(request: Request) -> Response:
        collector = _collector(request)
        # Names the server and its store, so a client trusts a sidecar only when
        # the process on that port is this server (not whatever took the port).
        me = {"service": "tracekit", "store_id": store_id(collector.store.path)}
        backlog = collector.backlog()
        trouble = collector.unhealthy or _decoder_trouble(request)
        if trouble:
            return JSONResponse({"ok": False, "error": trouble, **me, "backlog": backlog}, 503)
        return JSONResponse({"ok": True, **me, "backlog": backlog})

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
    # Added last, so it runs first: a request for another host is refused before the token.
    app.add_middleware(
        HostGuard,
        allowed=allowed_hosts(config.host, config.allow_hosts),
        any_address=config.host in ("0.0.0.0", "::"),
    )
    return app


def _warm() -> None:
    """Import the decoders now: the first request must not wait for them (a second, loaded)."""
    import tracekit.intake.otlp.decode_json
    import tracekit.intake.otlp.decode_json_fast
    import tracekit.intake.otlp.decode_proto  # noqa: F401


async def _status_lines(collector: Collector) -> None:
    """A line every few seconds while data comes in; nothing while idle."""
    last = collector.status_line()
    while True:
        await asyncio.sleep(_STATUS_EVERY)
        line = collector.status_line()
        if line != last:  # something arrived, was loaded or refused since the last line
            print(f"tracekit serve: {line}", file=sys.stderr, flush=True)
            last = line


def _decoder_trouble(request: Request) -> str | None:
    decoder: DecodePool | None = getattr(request.app.state, "decoder", None)
    for pid in decoder.pids() if decoder is not None else ():
        trouble = child_trouble("decoding", pid)
        if trouble:
            return trouble
    return None


def _collector(request: Request) -> Collector:
    found: Collector = request.app.state.collector
    return found


def _media(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


class _Gate:
    """Requests decoding or waiting for the spool; past the bound new ones get 429.

    A request takes its slot only once its body is in: a client slow to send
    holds memory for what it sent (the body budget), never a slot.
    """

    def __init__(self, bound: int, config: ServeConfig) -> None:
        self.bound = bound
        self.inflight = 0
        self.budget = BodyBudget(config.body_budget)
        self.limits = BodyLimits(config.max_body, config.body_idle, config.body_timeout)


async def _receive(
    request: Request,
    media: str,
    gate: _Gate,
    store: Callable[[bytes, str], Awaitable[Accepted]],
) -> Response:
    collector = _collector(request)
    if collector.failed:
        reason = f"the store refused a write ({collector.failed}); retry later"
        return failure(503, reason, media, _RETRY_SECONDS)
    try:
        body = await read_body(request, gate.limits, gate.budget)
    except ClientGoneError:
        client = request.client.host if request.client else "?"
        log.warning("a client (%s) went away before its body was in", client)
        return failure(400, "the client went away", media)
    except (TooLargeError, SlowBodyError, BudgetError) as exc:
        return _refused(exc, media, collector)
    try:
        if gate.inflight >= gate.bound:
            collector.busy_answers += 1
            return failure(429, "too many requests in flight", media, _RETRY_SECONDS)
        gate.inflight += 1
        try:
            accepted = await store(body, request.headers.get("content-encoding", ""))
        except (TooLargeError, BadRequestError, SpoolFullError, DecodeUnavailableError) as exc:
            return _refused(exc, media, collector)
        finally:
            gate.inflight -= 1
    finally:
        gate.budget.give(len(body))  # read_body took it; held until the request is answered
    return success(media, accepted.refused, accepted.message)


def _refused(exc: Exception, media: str, collector: Collector) -> Response:
    """The status a refusal gets; the retryable ones count as busy answers."""
    if isinstance(exc, TooLargeError):
        return failure(413, str(exc), media)
    if isinstance(exc, BadRequestError):
        return failure(400, str(exc), media)
    if isinstance(exc, SlowBodyError):
        return failure(408, str(exc), media)
    collector.busy_answers += 1
    status = 429 if isinstance(exc, BudgetError) else 503
    return failure(status, str(exc), media, _RETRY_SECONDS)


def _records_decoder(limit: int) -> Callable[[bytes, str], Entry]:
    def decode(body: bytes, encoding: str) -> Entry:
        return decode_records(inflate(body, encoding, limit))

    return decode


class _TokenMiddleware:
    """401 for a request without ``Authorization: Bearer TOKEN`` (``/healthz`` is open)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] not in _OPEN:
            given = dict(scope["headers"]).get(b"authorization", b"")
            # The scheme is case-insensitive (RFC 7235); the token is compared exactly.
            scheme, _, credentials = given.strip().partition(b" ")
            good = scheme.lower() == b"bearer" and hmac.compare_digest(
                credentials.strip(), self.expected
            )
            if not good:
                response = failure(401, "missing or wrong bearer token")
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
