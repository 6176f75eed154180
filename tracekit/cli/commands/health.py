"""Fleet health: ``tracekit export`` (to a lake), ``fleet`` and ``dashboard``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tracekit.cli.commands.options import (
    AgentOption,
    ColorMode,
    FleetDbOption,
    FleetFormat,
    LakeEngine,
    Percentiles,
    ServerOption,
    ServiceOption,
    SinceOption,
    WaitOption,
)
from tracekit.cli.quick import DEFAULT_WAIT


def export_command(
    to: Annotated[
        str, typer.Option("--to", metavar="DIR", help="The lake folder (created if missing).")
    ],
    db: FleetDbOption = None,
    wait: WaitOption = DEFAULT_WAIT,
    writer: Annotated[
        str | None,
        typer.Option(
            "--writer",
            metavar="ID",
            help="This store's id in a lake many write into (default: HOST-STORENAME).",
        ),
    ] = None,
) -> None:
    """Export the store to a Parquet lake (by day and service); again: only what changed.

    Many stores (collectors) can export into one lake, each as its own --writer.
    """
    from tracekit._util.text import escape
    from tracekit.cli.remote import exported_store
    from tracekit.lake.export import default_writer, export_lake
    from tracekit.store.db import default_path

    # The writer id comes from the store's own name, not its snapshot's: one id per store.
    writer = writer or default_writer(db if db is not None else default_path())
    with exported_store(db) as path:  # a served store: the server's consistent snapshot
        report = export_lake(path, to, wait=wait, writer=writer)
    for line in report.summary().splitlines():  # the folder name is the user's: escaped
        print(escape(line), file=sys.stderr)


def fleet_command(
    db: FleetDbOption = None,
    since: SinceOption = None,
    service: ServiceOption = None,
    agent: AgentOption = None,
    format: Annotated[
        FleetFormat, typer.Option("--format", help="table (for people) or json (every row).")
    ] = FleetFormat.table,
    color: Annotated[
        ColorMode, typer.Option("--color", help="Colour the tables; auto honours NO_COLOR.")
    ] = ColorMode.auto,
    wait: WaitOption = DEFAULT_WAIT,
    server: ServerOption = None,
    lake: Annotated[
        str | None,
        typer.Option(
            "--lake", metavar="DIR", help="Read a lake made by tracekit export instead of a store."
        ),
    ] = None,
    engine: Annotated[
        LakeEngine,
        typer.Option("--engine", help="What reads the lake: duckdb (here) or spark (--remote)."),
    ] = LakeEngine.duckdb,
    remote: Annotated[
        str | None,
        typer.Option("--remote", metavar="URL", help="The Spark Connect server: sc://HOST:15002."),
    ] = None,
    percentiles: Annotated[
        Percentiles,
        typer.Option(
            "--percentiles", help="exact, or approx: bounded memory on a big lake, not exact."
        ),
    ] = Percentiles.exact,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", min=0, metavar="N", help="Degraded runs and circles listed (totals kept)."
        ),
    ] = 50,
    offset: Annotated[
        int, typer.Option("--offset", min=0, metavar="N", help="Skip the first N of those lists.")
    ] = 0,
) -> None:
    """Fleet health: outcomes, recursion circles, failure origins, degraded runs, latency, delegations.

    With --since, each share is compared with the window of the same length just before.
    With --lake, the same report from an exported lake, on DuckDB or on Spark.
    """
    from tracekit.cli.fleet import print_fleet
    from tracekit.fleet.options import FleetOptions

    options = FleetOptions(
        since=since,
        service=service,
        agent=agent,
        lake=lake,
        engine=engine.value,
        remote=remote,
        percentiles=percentiles.value,
        limit=limit,
        offset=offset,
    )
    print_fleet(db, options, fmt=format.value, color=color.value, wait=wait, server=server)


def dashboard_command(
    out: Annotated[
        str,
        typer.Option(
            "--out", "-o", metavar="FILE", help="The HTML file to write (its folder must exist)."
        ),
    ] = "dashboards/fleet-health.html",
    db: FleetDbOption = None,
    since: SinceOption = None,
    service: ServiceOption = None,
    agent: AgentOption = None,
    wait: WaitOption = DEFAULT_WAIT,
    server: ServerOption = None,
) -> None:
    """Write the fleet-health dashboard: one HTML file that opens offline in any browser."""
    from tracekit.cli.remote import server_url
    from tracekit.dashboards.page import save_page, write_dashboard

    _check_out_folder(out)
    url = server_url(db, server)
    if url is not None:
        from tracekit.server.client import ServerClient

        page = ServerClient(url).dashboard(since=since, service=service, agent=agent)
        path = save_page(out, page)
    else:
        path = write_dashboard(out, db=db, since=since, service=service, agent=agent, wait=wait)
    print(f"dashboard written to {path}", file=sys.stderr)


_DEFAULT_OUT = "dashboards/fleet-health.html"


def _check_out_folder(out: str) -> None:
    """Refuse an --out whose folder is missing (a typo must not make folders); the default's is made."""
    from pathlib import Path

    from tracekit._util.text import escape
    from tracekit.errors import TracekitError

    folder = Path(out).parent
    if out == _DEFAULT_OUT:
        folder.mkdir(parents=True, exist_ok=True)
    elif not folder.is_dir():
        raise TracekitError(
            f"--out {escape(out)}: the folder {escape(str(folder))} does not exist",
            hint=f"Create it first (mkdir -p {escape(str(folder))}), or write elsewhere.",
        )
