"""``tracekit serve``: the OTLP collector, run in the foreground."""

from __future__ import annotations

from typing import Annotated

import typer

from tracekit.cli.commands.options import DbOption, DialectOption
from tracekit.errors import TracekitError


def serve_command(
    db: DbOption = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; other than loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="OTLP/HTTP port (0: any free port).")] = 4318,
    grpc_port: Annotated[
        int | None,
        typer.Option("--grpc-port", help="Also take OTLP/gRPC on this port (off unless given)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="TRACEKIT_SERVE_TOKEN",
            help="Require 'Authorization: Bearer TOKEN' on every request"
            " (prefer TRACEKIT_SERVE_TOKEN: ps shows options).",
        ),
    ] = None,
    max_body: Annotated[
        int,
        typer.Option("--max-body", help="Bytes a request body may have, also once inflated (413)."),
    ] = 32 << 20,
    spool_limit: Annotated[
        int,
        typer.Option("--spool-limit", help="Bytes acknowledged but not yet loaded before 503."),
    ] = 64 << 20,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME",
            help="Also answer requests for this Host name (repeatable; loopback always).",
        ),
    ] = None,
    lake: Annotated[
        str | None,
        typer.Option("--lake", metavar="DIR", help="Also export into this lake while serving."),
    ] = None,
    export_every: Annotated[
        str, typer.Option("--export-every", metavar="SPAN", help="With --lake: how often (5m).")
    ] = "5m",
    writer: Annotated[
        str | None,
        typer.Option("--writer", metavar="ID", help="With --lake: this server's id in the lake."),
    ] = None,
    dialect: DialectOption = None,
) -> None:
    """Collect OTLP traces live into the store (POST /v1/traces), until Ctrl-C or SIGTERM.

    Point any OpenTelemetry exporter at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318.
    Every batch acknowledged is on disk first; a restart after a crash loads what was not
    yet stored. tracekit's own records go to POST /v1/records (application/x-ndjson).
    """
    import os
    from pathlib import Path

    _check_port("--port", port)
    if grpc_port is not None:
        _check_port("--grpc-port", grpc_port)
        _check_grpc()
    from tracekit.intake.otlp.dialect import find_dialects
    from tracekit.server import ServeConfig, serve
    from tracekit.store.db import default_path

    path = Path(db) if db is not None else default_path()
    if token is None and os.environ.get("TRACEKIT_SERVE_TOKEN") == "":
        token = ""  # set but empty: refused below, never an open server by mistake
    config = ServeConfig(path, host=host, port=port, grpc_port=grpc_port, token=token)
    config.max_body, config.spool_limit = max_body, spool_limit
    config.allow_hosts = list(allow_host or [])
    config.dialects = find_dialects(dialect or ())
    options = None
    if lake is not None:
        from tracekit.server.lake_export import LakeOptions, every_seconds

        options = LakeOptions(Path(lake), every_seconds(export_every), writer)
    serve(config, lake=options)


def _check_port(option: str, port: int) -> None:
    """A port outside 0-65535 is one line, not the socket layer's traceback."""
    if not 0 <= port <= 65535:
        raise TracekitError(
            f"{option} {port}: a port is a number from 0 to 65535",
            hint=f"For example {option} 4318 (0: any free port).",
        )


def _check_grpc() -> None:
    """OTLP/gRPC needs grpcio, the one part of the collector that is an extra."""
    from tracekit._util.extras import install_line, installed

    if not installed("grpc"):
        raise TracekitError(
            "--grpc-port needs grpcio, which is not installed",
            hint=f"{install_line('serve')} (OTLP/HTTP on --port needs nothing more).",
        )
