"""The read side of ``tracekit serve``: the store's runs, trees, fleet and SQL while it is written.

Every handler reads through its own cursor on the server's one database
(:meth:`Collector.read_cursor`), wrapped as a read-only :class:`~tracekit.store.Store`
view, so the same library calls answer here as on a store opened by path
(``tracekit runs``, ``tree --db``, ``fleet``, ``sql``, ``dashboard``), and
the CLI prints the same output through this API as on a free store.

Tables come as JSON, or as an Arrow IPC stream when the request accepts
``application/vnd.apache.arrow.stream`` (the CLI asks for that: every type
arrives as DuckDB gave it). Errors a user can cause are JSON
``{"error", "hint"}`` with 400, or 404 for an unknown run.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, Final

import duckdb
import pyarrow as pa
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from tracekit.errors import RunNotFoundError, TracekitError
from tracekit.server.body import BodyLimits, BudgetError, ClientGoneError, SlowBodyError, read_body
from tracekit.server.decode import TooLargeError
from tracekit.server.memory import MemoryStoppedError
from tracekit.server.sql import DEFAULT_LIMIT, DEFAULT_TIMEOUT, SqlResult, bounded_sql
from tracekit.server.workers import ReadsBusyError
from tracekit.store import Store, stored_marker

__all__ = ["ARROW", "NDJSON", "per_request", "read_routes", "table_reply"]

ARROW: Final = "application/vnd.apache.arrow.stream"
NDJSON: Final = "application/x-ndjson"
_MAX_RUNS: Final = 100_000
_MAX_SQL_BODY: Final = 1 << 20
_PAGES_KEPT: Final = 32  # pages (live content, dashboards) kept by store version and filters
_WINDOW_S: Final = 60  # a page with a moving window ("since 1h") is rebuilt after this


class _PageCache:
    """Built pages by (store version, filters): the store only changes by ingest, so
    a page asked again before the next batch is sent as it was built, at once."""

    def __init__(self) -> None:
        self._pages: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], build: Callable[[], bytes]) -> bytes:
        with self._lock:
            if key in self._pages:
                self._pages.move_to_end(key)
                return self._pages[key]
        page = build()  # outside the lock: two first askers may both build it
        with self._lock:
            self._pages[key] = page
            while len(self._pages) > _PAGES_KEPT:
                self._pages.popitem(last=False)
        return page


def _page_cache(request: Request) -> _PageCache:
    state = request.app.state
    with contextlib.suppress(AttributeError):
        return state.page_cache
    state.page_cache = cache = _PageCache()
    return cache


def _page_key(request: Request, version: str, *names: str) -> tuple[Any, ...]:
    q = request.query_params
    moving = int(time.time() // _WINDOW_S) if q.get("since") else None
    return (request.url.path, version, moving, *(q.get(n) or None for n in names))


@contextlib.contextmanager
def _view(request: Request) -> Iterator[Store]:
    collector = request.app.state.collector
    cursor = collector.read_cursor()
    # Every read is bounded in time: past it, DuckDB is told to stop.
    timer = threading.Timer(collector.config.read_timeout, cursor.interrupt)
    timer.start()
    view = Store.over(cursor, collector.store.path)
    try:
        yield view
    finally:
        timer.cancel()
        view.close()


def _reading(work: Callable[[Store], Response]) -> Callable[[Request], Any]:
    """A handler that runs ``work`` on a store view on a read thread, errors as JSON."""

    async def handler(request: Request) -> Response:
        def run() -> Response:
            with _view(request) as store, request.app.state.memory.watch(store.con):
                return work(store)

        try:
            return await request.app.state.workers.read(run)
        except ReadsBusyError as exc:
            return JSONResponse(
                {"error": str(exc), "hint": None}, 429, headers={"Retry-After": "1"}
            )
        except MemoryStoppedError as exc:
            return JSONResponse({"error": str(exc), "hint": "Ask for less."}, 503)
        except RunNotFoundError as exc:
            return _error(404, exc)
        except TracekitError as exc:
            status = 503 if request.app.state.collector.failed else 400
            return _error(status, exc)
        except duckdb.InterruptException:
            seconds = request.app.state.collector.config.read_timeout
            return JSONResponse({"error": f"the read ran past {seconds:g} s", "hint": None}, 503)
        except duckdb.Error as exc:  # the database was invalidated under the read
            text = str(exc).strip().splitlines()[0][:300]
            return JSONResponse({"error": f"the store cannot be read now ({text})"}, 503)

    return handler


def _error(status: int, exc: TracekitError) -> JSONResponse:
    body = {"error": str(exc), "hint": exc.hint}
    if isinstance(exc, RunNotFoundError):
        body["run_id"] = exc.run_id
    return JSONResponse(body, status)


def _wants_arrow(request: Request) -> bool:
    return ARROW in request.headers.get("accept", "")


def _table(request: Request, table: pa.Table, extra: dict[str, Any] | None = None) -> Response:
    """A table as Arrow IPC (for the CLI) or as JSON records."""
    if _wants_arrow(request):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        headers = {k: json.dumps(v) for k, v in (extra or {}).items()}
        return Response(sink.getvalue().to_pybytes(), media_type=ARROW, headers=headers)
    rows = table.to_pandas().to_json(orient="records", date_format="iso", date_unit="us")
    body = (
        '{"rows":'
        + rows
        + "".join(f',"{k}":{json.dumps(v)}' for k, v in (extra or {}).items())
        + "}"
    )
    return Response(body, media_type="application/json")


def _int(request: Request, name: str, default: int, top: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not text.isdigit():
        raise TracekitError(f"{name} must be a whole number, not {text[:40]!r}")
    return min(int(text), top)


def _filters(request: Request) -> dict[str, Any]:
    q = request.query_params
    return {k: q.get(k) or None for k in ("since", "service", "agent")}


def _runs(request: Request) -> Callable[[Store], Response]:
    def work(store: Store) -> Response:
        limit = _int(request, "limit", 50, _MAX_RUNS)
        status = request.query_params.get("status") or None
        df = store.runs(status=status, limit=limit, **_filters(request))
        return _table(request, pa.Table.from_pandas(df, preserve_index=False))

    return work


def _records(request: Request) -> Callable[[Store], Response]:
    """The v1 records of a run's whole tree, one per line: the CLI draws the tree from them."""
    from tracekit.events import encode_event

    def work(store: Store) -> Response:
        events = store.events(request.path_params["run_id"])
        return Response(b"\n".join(encode_event(e) for e in events) + b"\n", media_type=NDJSON)

    return work


def _tree(request: Request) -> Callable[[Store], Response]:
    """A run's tree as the JSON of ``tracekit tree --json``, or as ``tracekit tree RUN --db``'s text."""
    from tracekit.store.cause import describe_cause
    from tracekit.tree.build import build_forest
    from tracekit.tree.forest import forest_to_json
    from tracekit.tree.text import describe_forest

    def work(store: Store) -> Response:
        run_id = request.path_params["run_id"]
        forest = build_forest(store.events(run_id))
        run = forest.run(run_id, source=f"{store.path}:{run_id}")
        if request.query_params.get("format") == "text":
            errors = request.query_params.get("errors") in ("1", "true", "yes")
            cause = store.root_cause(run_id)  # then why, as tracekit tree RUN --db prints it
            why = describe_cause(cause) if cause is not None else []
            text = "\n".join([describe_forest(forest, run_id=run_id, errors_only=errors), *why])
            return Response(text + "\n", media_type="text/plain; charset=utf-8")
        return Response(forest_to_json(forest, [run]), media_type="application/json")

    return work


def _fleet(request: Request) -> Callable[[Store], Response]:
    """The JSON of ``tracekit fleet`` (``?format=text&width=N&color=1`` for its tables)."""
    from tracekit.fleet import fleet_report
    from tracekit.fleet.text import render_fleet

    def work(store: Store) -> Response:
        limit = _int(request, "limit", 50, _MAX_RUNS)  # lists paged: ?limit=N&offset=N
        offset = _int(request, "offset", 0, 1 << 40)
        report = fleet_report(store, **_filters(request), limit=limit, offset=offset)
        if request.query_params.get("format") == "text":
            width = _int(request, "width", 120, 1000)
            color = request.query_params.get("color") in ("1", "true", "yes")
            text = render_fleet(report, width=max(width, 40), color=color)
            return Response(text, media_type="text/plain; charset=utf-8")
        # As `tracekit fleet --format json` writes it (tracekit.cli.fleet.fleet_json).
        text = json.dumps(report.to_dict(), indent=2, allow_nan=False)
        return Response(text, media_type="application/json")

    return work


async def _sql(request: Request) -> Response:
    """``POST /api/sql``: ``{"query": "...", "limit": N, "timeout": S}``, as ``application/json``.

    Only JSON: a browser sends it cross-origin only after a preflight, which
    this server never grants (a form or ``text/plain`` body would need none).
    """
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        hint = 'Send Content-Type: application/json and {"query": "SELECT ..."}.'
        return JSONResponse(
            {"error": f"unsupported Content-Type {media[:60]!r}", "hint": hint}, 415
        )
    gate = request.app.state.gate
    config = request.app.state.collector.config
    limits = BodyLimits(_MAX_SQL_BODY, config.body_idle, config.body_timeout)
    try:
        body = await read_body(request, limits, gate.budget)
        query, limit, timeout = _sql_request(body)
    except TooLargeError:
        return JSONResponse({"error": "the query is over 1 MiB", "hint": None}, 413)
    except (SlowBodyError, BudgetError, ClientGoneError) as exc:
        status = 429 if isinstance(exc, BudgetError) else 408
        return JSONResponse({"error": str(exc), "hint": None}, status)
    except TracekitError as exc:
        return _error(400, exc)

    def work(store: Store) -> Response:
        result = bounded_sql(store, query, limit=limit, timeout=timeout, max_bytes=config.max_reply)
        return _sql_reply(request, result)

    return await _reading(work)(request)


def _sql_reply(request: Request, result: SqlResult) -> Response:
    """The rows, encoded a batch at a time as the reply is sent (never one whole string)."""
    extra: dict[str, Any] = {"truncated": result.truncated}
    if result.stopped:
        extra["stopped"] = result.stopped
    if _wants_arrow(request):
        headers = {k: json.dumps(v) for k, v in extra.items()}
        return StreamingResponse(_arrow_pieces(result), media_type=ARROW, headers=headers)
    return StreamingResponse(_json_pieces(result, extra), media_type="application/json")


def _arrow_pieces(result: SqlResult) -> Iterator[bytes]:
    sink = _Pieces()
    writer = pa.ipc.new_stream(sink, result.table.schema)
    for batch in result.table.to_batches(max_chunksize=2048):
        writer.write_batch(batch)
        yield sink.take()
    writer.close()
    yield sink.take()


class _Pieces(io.RawIOBase):
    """A sink the IPC writer writes into, emptied after each batch."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


def _json_pieces(result: SqlResult, extra: dict[str, Any]) -> Iterator[bytes]:
    yield b'{"rows":['
    first = True
    for batch in result.table.to_batches(max_chunksize=2048):
        text = (
            pa.Table.from_batches([batch])
            .to_pandas()
            .to_json(orient="records", date_format="iso", date_unit="us")
        )
        if text == "[]":
            continue
        yield (b"" if first else b",") + text[1:-1].encode()
        first = False
    yield b"]" + "".join(f',"{k}":{json.dumps(v)}' for k, v in extra.items()).encode() + b"}"


def _sql_request(body: bytes) -> tuple[str, int, float]:
    """The query, its row limit and its time limit (each at most the server's)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise TracekitError('the body is not JSON: send {"query": "SELECT ..."}') from None
    if not isinstance(data, dict) or not isinstance(data.get("query"), str):
        raise TracekitError('send {"query": "SELECT ...", "limit": N, "timeout": SECONDS}')
    limit, timeout = data.get("limit", DEFAULT_LIMIT), data.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise TracekitError("limit must be a whole number of rows")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise TracekitError("timeout must be a number of seconds")
    return data["query"], min(limit, DEFAULT_LIMIT), min(float(timeout), DEFAULT_TIMEOUT)


def _version(store: Store) -> str:
    """Changes whenever the loader stores a batch: the page redraws only then."""
    marker = stored_marker(store.con)
    return hashlib.blake2s(repr(marker).encode(), digest_size=8).hexdigest()


def _live(request: Request) -> Callable[[Store], Response]:
    from tracekit.dashboards.live import live_content

    def work(store: Store) -> Response:
        waiting = _waiting_spans(request)
        version = f"{_version(store)}+{waiting}"  # spans arriving change the page too
        if request.query_params.get("version") == version:
            return JSONResponse({"version": version, "unchanged": True})
        outcome = request.query_params.get("outcome") or None

        def build() -> bytes:
            content = live_content(
                store, version=version, outcome=outcome, waiting=waiting, **_filters(request)
            )
            return json.dumps(content, allow_nan=False, default=str).encode()

        key = _page_key(request, version, "since", "service", "agent", "outcome")
        return Response(_page_cache(request).get(key, build), media_type="application/json")

    return work


def _waiting_spans(request: Request) -> int:
    """Spans the collector holds until their trace's root arrives (0 if it cannot say)."""
    loader = getattr(request.app.state.collector, "loader", None)
    return int(getattr(loader, "pending_spans", 0) or 0)


def _run_page(request: Request) -> Callable[[Store], Response]:
    from tracekit.dashboards.live import run_page

    def work(store: Store) -> Response:
        return HTMLResponse(run_page(store, request.path_params["run_id"]))

    return work


def _dashboard(request: Request) -> Callable[[Store], Response]:
    """The static dashboard of ``tracekit dashboard``, built here (the server holds the store)
    and kept until the store changes."""
    from tracekit.dashboards.page import build_dashboard

    def work(store: Store) -> Response:
        def build() -> bytes:
            return build_dashboard(store, **_filters(request)).encode()

        key = _page_key(request, _version(store), "since", "service", "agent")
        return HTMLResponse(_page_cache(request).get(key, build))

    return work


def _per_request(
    make: Callable[[Request], Callable[[Store], Response]],
) -> Callable[[Request], Any]:
    async def handler(request: Request) -> Response:
        return await _reading(make(request))(request)

    return handler


async def _home(request: Request) -> Response:
    from tracekit.dashboards.live import live_shell

    return HTMLResponse(live_shell())


async def _plotly(request: Request) -> Response:
    from tracekit.dashboards.live import plotly_js

    text = await run_in_threadpool(plotly_js)
    return Response(
        text,
        media_type="application/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )


def read_routes() -> list[BaseRoute]:
    """The read API and the live page, for :func:`tracekit.server.app.create_app`."""
    return [
        Route("/", _home, methods=["GET"]),
        Route("/static/plotly.min.js", _plotly, methods=["GET"]),
        Route("/runs/{run_id:path}", _per_request(_run_page), methods=["GET"]),
        Route("/api/runs", _per_request(_runs), methods=["GET"]),
        Route("/api/runs/{run_id:path}/tree", _per_request(_tree), methods=["GET"]),
        Route("/api/runs/{run_id:path}/records", _per_request(_records), methods=["GET"]),
        Route("/api/fleet", _per_request(_fleet), methods=["GET"]),
        Route("/api/live", _per_request(_live), methods=["GET"]),
        Route("/api/dashboard", _per_request(_dashboard), methods=["GET"]),
        Route("/api/sql", _sql, methods=["POST"]),
    ]


def per_request(
    make: Callable[[Request], Callable[[Store], Response]],
) -> Callable[[Request], Any]:
    """A read handler: ``make(request)`` runs on a store view, on a read thread, bounded."""
    return _per_request(make)


def table_reply(request: Request, table: pa.Table, extra: dict[str, Any] | None = None) -> Response:
    """A table as Arrow IPC (when the request accepts it) or as JSON records."""
    return _table(request, table, extra)
