"""``tracekit serve``: a live OTLP collector that owns the store (layer 7, beside the CLI).

OTLP/HTTP (``POST /v1/traces``, protobuf or JSON) and optionally OTLP/gRPC
come in; each accepted batch is made durable in a spool before it is
acknowledged; a loader moves the spool into the store with the same
set-based ingest as ``tracekit ingest``. See ``docs/serve.md``.
"""

from __future__ import annotations

from tracekit.server.config import ServeConfig, ServeError

__all__ = ["ServeConfig", "ServeError", "create_app", "serve"]


def __getattr__(name: str) -> object:
    # Starlette and uvicorn load only when a server is made.
    if name == "create_app":
        from tracekit.server.app import create_app

        return create_app
    if name == "serve":
        from tracekit.server.run import serve

        return serve
    raise AttributeError(name)
