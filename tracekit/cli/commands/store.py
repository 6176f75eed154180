"""The store's commands: ingest, runs, session, rejects, sql, find."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tracekit._util.plain_frame import PlainFrame
from tracekit._util.text import plural
from tracekit.cli.commands.options import (
    DbOption,
    DialectOption,
    FormatOption,
    IngestFormat,
    ServerOption,
    TableFormat,
    WaitOption,
)
from tracekit.cli.output import emit
from tracekit.cli.quick import DEFAULT_WAIT

# The table's columns, most telling first: those that do not fit the terminal
# are left out from the end (JSON and CSV have every column).
_RUN_COLUMNS = [
    "run_id",
    "start_at",
    "service",
    "agent",
    "outcome",
    "status",
    "duration_ms",
    "invocations",
    "failed_invocations",
    "max_depth",
    "origin_agent",
    "origin_code",
    "session_id",
    "input_tokens",
    "output_tokens",
    "origin_step",
]


def ingest_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Files, directories (walked for *.jsonl, *.jsonl.gz, *.json), globs, or -."
        ),
    ],
    db: DbOption = None,
    format: Annotated[
        IngestFormat, typer.Option("--format", help="auto (by content), tracekit (v1) or otlp.")
    ] = IngestFormat.auto,
    dialect: DialectOption = None,
) -> None:
    """Load traces into the store; every line is accounted for on the last line printed.

    A file ingested again adds nothing; a file that grew is read from where the
    last ingest stopped. Bad lines go to the rejects table (tracekit rejects).
    A new store into which nothing went (a missing file, no trace) is not kept.
    """
    from tracekit.cli.ingest import ingest_into, refuse_what_is_no_trace
    from tracekit.cli.progress import progress_bar
    from tracekit.cli.remote import server_url

    refuse_what_is_no_trace(paths)
    url = server_url(db, None)
    if url is not None:  # tracekit serve holds the store: it loads what it is sent
        _forward(paths, url)
        return
    from tracekit.intake.otlp.dialect import find_dialects

    dialects = find_dialects(dialect or ())
    report = ingest_into(db, paths, format.value, progress_bar(), dialects)
    _print_sources(report)
    if report.totals.rejected:
        bad = plural(report.totals.rejected, "bad line")
        print(f"{bad} kept in the rejects table: tracekit rejects")
    print(report.reconciliation())


def _print_sources(report: Any) -> None:
    """A line a source (up to 20); where the OTLP spans went, per file or, joined, for all."""
    otlp = [source.spans for source in report.sources if source.spans is not None]
    for source in report.sources if len(report.sources) <= 20 else []:
        c = source.counts
        if source.skipped:
            print(f"{_clean(source.source)}: skipped, {source.skipped}")
            continue
        note = " (unchanged)" if source.unchanged else ""
        print(
            f"{_clean(source.source)}: {c.read} read, {c.accepted} accepted,"
            f" {c.rejected} rejected, {plural(c.duplicates, 'duplicate')}{note}"
        )
        if source.spans is not None and len(otlp) == 1:  # OTLP: where every span read went
            print(f"  {source.spans.line()}")
            for note in source.spans.notes():
                print(f"  {note}")
    if len(otlp) > 1:  # a trace may run over several files: its spans are counted once joined
        from tracekit.intake.otlp.counts import SpanCounts

        joined = SpanCounts()
        for spans in otlp:
            joined.add(spans)
        print(f"the {len(otlp)} OTLP files, their traces joined: {joined.line()}")
        for note in joined.notes():
            print(f"  {note}")


def rederive_command(
    db: DbOption = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="WHEN", help="Traces with a span since then (2h, 7d, 2026-01-31)."
        ),
    ] = None,
    service: Annotated[
        str | None, typer.Option("--service", metavar="NAME", help="Only this service's traces.")
    ] = None,
    dialect: DialectOption = None,
) -> None:
    """Derive runs again from the stored spans under this tracekit's rules (after an upgrade).

    Each trace's earlier rows are replaced: the store then equals a fresh
    ingest of the same files. v1 records are kept as read and need nothing.
    """
    from tracekit.cli.ingest import store_to_ingest_into
    from tracekit.cli.progress import trace_bar
    from tracekit.intake.otlp.dialect import find_dialects

    dialects = find_dialects(dialect or ())
    with store_to_ingest_into(db) as store:
        report = store.rederive(
            since=since, service=service, progress=trace_bar(), dialects=dialects
        )
    print(report.line())


def _forward(paths: list[str], url: str) -> None:
    from tracekit.cli.forward import forward_files

    sent = forward_files(paths, url)
    print(
        f"the store is held by tracekit serve at {url}: sent {sent.records} records"
        f" (POST /v1/records) and {sent.documents} OTLP documents (POST /v1/traces);"
        f" the server loads them (GET {url}/api/ingest, tracekit rejects)"
    )


def runs_command(
    db: DbOption = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="ok, error, running, or an outcome (failed = failed:*).",
        ),
    ] = None,
    service: Annotated[
        str | None, typer.Option("--service", metavar="NAME", help="Only this service.")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", metavar="NAME", help="Runs of this root agent, or that invoked it."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="SPAN|TIME",
            help="Started within this span (30m, 2h, 7d) or since a time.",
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=0, metavar="N", help="At most this many runs.")
    ] = 50,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help="Only the runs of this session."),
    ] = None,
    format: FormatOption = TableFormat.table,
    wait: WaitOption = DEFAULT_WAIT,
    server: ServerOption = None,
) -> None:
    """List root runs, newest first."""
    from tracekit.cli.remote import open_reader
    from tracekit.store.listing import runs_listing

    with open_reader(db, server, wait) as store:
        df = runs_listing(
            store,
            status=status,
            service=service,
            agent=agent,
            since=since,
            limit=limit,
            session=session,
        )
    if format is TableFormat.table:
        df = _columns(df, _RUN_COLUMNS)
    _emit(df, format)


def session_command(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="The session's id.")],
    db: DbOption = None,
    format: Annotated[
        TableFormat,
        typer.Option("--format", help="table (a header, a line a run), json or csv."),
    ] = TableFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """Show a session: its runs in order of start, each with outcome, duration, tokens."""
    from tracekit.cli.session import session_view

    print(session_view(session_id, db, "json" if as_json else format.value, wait=wait))


def rejects_command(
    db: DbOption = None,
    limit: Annotated[
        int, typer.Option("--limit", min=0, metavar="N", help="At most this many lines.")
    ] = 100,
    format: FormatOption = TableFormat.table,
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """List the lines that could not be read: source, line number, reason, text."""
    from tracekit.cli.remote import open_reader
    from tracekit.store.listing import rejects_listing

    with open_reader(db, None, wait) as store:
        df = rejects_listing(store, limit=limit)
    if format is TableFormat.table:
        df = _columns(df, ["source", "line", "reason", "raw"])
    _emit(df, format)


def sql_command(
    query: Annotated[str, typer.Argument(help="A SELECT query over the store's tables.")],
    db: DbOption = None,
    format: FormatOption = TableFormat.table,
    wait: WaitOption = DEFAULT_WAIT,
    server: ServerOption = None,
) -> None:
    """Run one SELECT on the store, read-only (tables: see docs/store.md)."""
    from tracekit.cli.remote import open_reader
    from tracekit.store.listing import sql_listing

    with open_reader(db, server, wait) as store:
        df = sql_listing(store, query)
    _emit(df, format)


def find_command(
    query: Annotated[
        str,
        typer.Argument(
            help="Agents joined by edges, e.g. 'billing >> refunds', each with optional"
            " predicates in brackets (the grammar: docs/find.md)."
        ),
    ],
    db: DbOption = None,
    runs: Annotated[
        bool, typer.Option("--runs", help="One row a matching run, not a path.")
    ] = False,
    json_: Annotated[
        bool, typer.Option("--json", help="JSON lines (same as --format json).")
    ] = False,
    csv_: Annotated[bool, typer.Option("--csv", help="CSV (same as --format csv).")] = False,
    format: FormatOption = TableFormat.table,
    limit: Annotated[
        int, typer.Option("--limit", min=0, metavar="N", help="At most this many rows.")
    ] = 50,
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """Find runs by delegation structure: who delegated to whom, and how it ended."""
    from tracekit.cli.find import print_find

    fmt = TableFormat.json if json_ else TableFormat.csv if csv_ else format
    print_find(query, db, runs=runs, fmt=fmt.value, limit=limit, wait=wait)


def _columns(df: Any, names: list[str]) -> Any:
    """These columns of a listing, in this order (a DataFrame's or a PlainFrame's)."""
    return df.select(names) if isinstance(df, PlainFrame) else df[names]


def _emit(df: Any, format: TableFormat) -> None:
    emit(df, format.value)


def _clean(text: str) -> str:
    """Escape control characters in a name for the terminal."""
    from tracekit.cli.tables import clean

    return clean(text)
