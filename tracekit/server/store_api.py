"""The rest of the store's reads over HTTP, so every read command works while the server runs.

With :mod:`tracekit.server.reads` these answer every method of
:class:`~tracekit.store.StoreReader` (rejects, sessions, find, a run's root cause), plus a run
against its fleet (``tracekit diff --against-fleet``) and a consistent
snapshot of the whole store (``tracekit export``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import pyarrow as pa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from tracekit.errors import TracekitError
from tracekit.server.reads import per_request, table_reply
from tracekit.server.snapshot import snapshot_store
from tracekit.store import Store

__all__ = ["store_routes"]

_MAX_ROWS: Final = 100_000


def _limit(request: Request, default: int | None) -> int | None:
    text = request.query_params.get("limit")
    if text is None:
        return default
    if not text.isdigit():
        raise TracekitError(f"limit must be a whole number, not {text[:40]!r}")
    return min(int(text), _MAX_ROWS)


def _frame(request: Request, df: Any, extra: dict[str, Any] | None = None) -> Response:
    return table_reply(request, pa.Table.from_pandas(df, preserve_index=False), extra)


def _rejects(request: Request) -> Callable[[Store], Response]:
    def work(store: Store) -> Response:
        return _frame(request, store.rejects(limit=_limit(request, 100)))

    return work


def _session(request: Request) -> Callable[[Store], Response]:
    def work(store: Store) -> Response:
        return _frame(request, store.session(request.path_params["session_id"]))

    return work


def _find(request: Request) -> Callable[[Store], Response]:
    """``?q=QUERY&limit=N&part=paths|runs``: one table of the result, its totals in the reply."""

    def work(store: Store) -> Response:
        found = store.find(request.query_params.get("q", ""), limit=_limit(request, 50))
        part = found.runs if request.query_params.get("part") == "runs" else found.paths
        extra = {"query": found.query, "total_paths": found.total_paths}
        extra["total_runs"] = found.total_runs
        return _frame(request, part, extra)

    return work


def _cause(request: Request) -> Callable[[Store], Response]:
    def work(store: Store) -> Response:
        cause = store.root_cause(request.path_params["run_id"])
        return JSONResponse(None if cause is None else cause._asdict())

    return work


def _against_fleet(request: Request) -> Callable[[Store], Response]:
    """``?rare=0.05&format=text|json``: ``tracekit diff RUN --against-fleet``."""
    from tracekit.fleet.rare import against_fleet, describe_against_fleet

    def work(store: Store) -> Response:
        try:
            share = float(request.query_params.get("rare", "0.05"))
        except ValueError:
            raise TracekitError("rare must be a share between 0 and 1") from None
        found = against_fleet(store, request.path_params["run_id"], rare_below=share)
        if request.query_params.get("format") == "json":
            return Response(found.to_json(), media_type="application/json")
        return Response(describe_against_fleet(found), media_type="text/plain; charset=utf-8")

    return work


async def _snapshot(request: Request) -> Response:
    """``POST /api/snapshot``: copy the store as of now beside it; the copy's path."""
    collector = request.app.state.collector
    try:
        path = await request.app.state.workers.read(lambda: snapshot_store(collector))
    except TracekitError as exc:
        return JSONResponse({"error": str(exc), "hint": exc.hint}, 503)
    except OSError as exc:
        return JSONResponse({"error": f"cannot write the snapshot ({exc})", "hint": None}, 507)
    return Response(json.dumps({"path": str(path)}), media_type="application/json")


def store_routes() -> list[BaseRoute]:
    """Rejects, sessions, find, a run against its fleet, and the snapshot."""
    return [
        Route("/api/rejects", per_request(_rejects), methods=["GET"]),
        Route("/api/sessions/{session_id:path}", per_request(_session), methods=["GET"]),
        Route("/api/find", per_request(_find), methods=["GET"]),
        Route(
            "/api/runs/{run_id:path}/against-fleet",
            per_request(_against_fleet),
            methods=["GET"],
        ),
        Route("/api/runs/{run_id:path}/cause", per_request(_cause), methods=["GET"]),
        Route("/api/snapshot", _snapshot, methods=["POST"]),
    ]
