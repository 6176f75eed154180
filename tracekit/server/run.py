"""``tracekit serve``: listen, serve until SIGTERM or Ctrl-C, then stop gracefully.

The store is opened (and its lock taken) before anything listens, so a
store another process holds is reported at once. The sidecar
``<db>.server.json`` says where the server listens while it runs; it is
removed once the store is loaded, checkpointed and closed.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Iterator

from tracekit.server.app import create_app
from tracekit.server.collector import Collector
from tracekit.server.config import ServeConfig, ServeError, sidecar_path, write_sidecar
from tracekit.server.lake_export import LakeExporter, LakeOptions
from tracekit.server.metrics import metrics_route
from tracekit.server.protocol import protocol_class
from tracekit.server.reads import read_routes
from tracekit.server.store_api import store_routes

__all__ = ["serve"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def serve(config: ServeConfig, *, lake: LakeOptions | None = None) -> None:
    """Run the server until SIGTERM or SIGINT (Ctrl-C); return once stopped cleanly.

    With ``lake``, also export the store into that lake every ``lake.every``
    seconds, and once more when stopping (:mod:`tracekit.server.lake_export`).

    Raises:
        ServeError: a non-loopback address without a token, or the port is taken.
        StoreLockedError: another process holds the store.
    """
    import uvicorn

    config.check()
    logging.basicConfig(level=logging.WARNING, format="tracekit serve: %(message)s")
    sock = _bind(config.host, config.port)
    collector = Collector(config)
    url = _url(config.host, sock.getsockname()[1])

    def ready(running: Collector) -> None:
        if config.grpc_port is not None:
            from tracekit.server.grpc_service import start_grpc

            grpc_server, grpc_port = start_grpc(running, config)
            running.before_stop.append(lambda: grpc_server.stop(grace=5).wait())
            print(f"tracekit serve: OTLP/gRPC on port {grpc_port}", file=sys.stderr)
        if lake is not None:
            exporter = LakeExporter(running, lake)
            exporter.start()
            running.before_close.append(exporter.stop)
            print(
                f"tracekit serve: exporting to {lake.lake} every {lake.every:g} s", file=sys.stderr
            )
        write_sidecar(running.store.path, url, token_required=bool(config.token))
        print(f"tracekit serve: listening on {url} (store {running.store.path})", file=sys.stderr)

    app = create_app(
        config,
        collector=collector,
        on_ready=ready,
        extra_routes=[*read_routes(), *store_routes(), metrics_route()],
    )
    server = _server_class()(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=30,
            http=protocol_class(config.header_timeout),
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        collector.stop()
        sidecar_path(collector.store.path).unlink(missing_ok=True)
        sock.close()
    print(
        f"tracekit serve: stopped; {_accounts(collector)}; {collector.stop_line()}",
        file=sys.stderr,
    )


def _accounts(collector: Collector) -> str:
    """Where what was acknowledged went: stored, rejected, pending (the spool keeps it)."""
    acknowledged, stored, pending, rejected = collector.totals()
    line = (
        f"of {acknowledged} spans and lines acknowledged: {stored} stored,"
        f" {rejected} rejected (tracekit rejects), {pending} pending"
    )
    if collector.failed:
        return line + f" (the store refused a write: {collector.failed}); the spool keeps them"
    if pending:
        return line + " (the spool keeps them for the next start)"
    return line


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, but a signal ends it with exit status 0, not by raising it again."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
