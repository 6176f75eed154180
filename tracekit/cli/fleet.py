"""The fleet report as terminal text (rich tables) or JSON: what ``tracekit fleet`` prints.

Names from traces are data: in tables each cell is a rich ``Text`` with
control characters escaped (:mod:`tracekit.fleet.text`); JSON escapes them
itself. Each format imports only what it needs (JSON: neither rich nor pandas).

Example:
    >>> from tracekit.fleet import fleet_report
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     report = fleet_report(store)
    >>> print(render_fleet(report, width=100))
    Fleet health: every run in the store
    <BLANKLINE>
    Runs: 40
    ┏━━━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━━━┓
    ┃ outcome          ┃ runs ┃ share ┃ before ┃ change ┃
    ┡━━━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━━━┩
    │ ok               │   34 │ 85.0% │      - │      - │
    ...
    >>> json.loads(fleet_json(report))["outcomes"][0]
    {'outcome': 'ok', 'runs': 34, 'share': 0.85,
     'previous_runs': None, 'previous_share': None, 'change': None}
"""

from __future__ import annotations

import json

from tracekit.fleet.options import FleetOptions
from tracekit.fleet.report import FleetReport

__all__ = ["fleet_json", "fleet_text", "print_fleet", "render_fleet"]


def render_fleet(report: FleetReport, *, width: int = 120, color: bool = False) -> str:
    """The report as rich tables, one after another, at a fixed width."""
    from tracekit.fleet.text import render_fleet as render

    return render(report, width=width, color=color)


def fleet_json(report: FleetReport) -> str:
    """The report as one JSON document (every row, not only those a table shows)."""
    return json.dumps(report.to_dict(), indent=2, allow_nan=False)


def fleet_text(
    db: str | None,
    options: FleetOptions,
    *,
    fmt: str = "table",
    color: bool = False,
    width: int | None = None,
    wait: float = 0.0,
    server: str | None = None,
) -> str:
    """Open the store (waiting up to ``wait`` seconds for a writer), or the lake on
    its engine, and return the report as text or JSON; through the server that holds
    the store, if one does."""
    from tracekit.cli.remote import server_url
    from tracekit.fleet import fleet_report_with, open_for_report

    url = server_url(db, server) if options.lake is None else None
    if url is not None:
        from tracekit.server.client import ServerClient

        width = width or _terminal_width()
        filters = {"since": options.since, "service": options.service, "agent": options.agent}
        return ServerClient(url).fleet(fmt=fmt, width=width, color=color, **filters)
    if options.lake is not None:
        report = fleet_report_with(None, options)
    else:
        with open_for_report(db, wait=wait) as store:
            report = fleet_report_with(store, options)
    if fmt == "json":
        return fleet_json(report)
    return render_fleet(report, width=width or _terminal_width(), color=color)


def print_fleet(
    db: str | None,
    options: FleetOptions,
    *,
    fmt: str = "table",
    color: str = "auto",
    wait: float = 0.0,
    server: str | None = None,
) -> None:
    """The fleet report, printed: what ``tracekit fleet`` does, however parsed."""
    from tracekit.cli.output import FAST_EXIT, print_view, use_color
    from tracekit.errors import LakeError

    if options.lake is None and (options.remote is not None or options.engine != "duckdb"):
        raise LakeError("--engine and --remote read a lake", hint="Add --lake DIR.")
    text = fleet_text(db, options, fmt=fmt, color=use_color(color), wait=wait, server=server)
    print_view(text, [])
    FAST_EXIT.append(0)  # the store is closed and the output flushed


def _terminal_width() -> int:
    import shutil

    return max(80, min(160, shutil.get_terminal_size((120, 40)).columns))
