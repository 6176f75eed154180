"""The ``tracekit`` command. Each command is a thin wrapper over a library call.

This is the only module that imports typer; the plainest command lines run
before it is imported (:mod:`tracekit.cli.entry`). It catches
:class:`TracekitError` alone: the user gets ``Error: ...`` and what to do
next, and exit code 2; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import enum
import sys
from typing import Annotated, Any

import typer

from tracekit._util.text import plural
from tracekit._version import __version__
from tracekit.cli.help import PlainCommand, PlainGroup
from tracekit.cli.output import emit, fail, print_view, use_color
from tracekit.cli.quick import DEFAULT_WAIT
from tracekit.errors import TracekitError

# Each command imports what it uses when it runs: `tracekit fleet` never loads
# the readers, the simulator or pandas (an import is most of a short command's time).

app = typer.Typer(
    name="tracekit",
    help="See who called whom in multi-agent systems, and what failed where.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=PlainGroup,
)


def _print_version(value: bool) -> None:
    if value:
        print(f"tracekit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """See who called whom in multi-agent systems, and what failed where."""
    # A callback keeps `tracekit <command>` a group even while it has one command.


# --- tree ---------------------------------------------------------------------


class TreeFormat(enum.StrEnum):
    """Output formats of ``tracekit tree``."""

    text = "text"
    json = "json"


class ShownStep(enum.StrEnum):
    """Steps the tree text hides unless asked for."""

    llm = "llm"


class ColorMode(enum.StrEnum):
    """When to colour: ``auto`` is on a terminal unless NO_COLOR is set."""

    auto = "auto"
    always = "always"
    never = "never"


def _use_color(mode: ColorMode) -> bool:
    return use_color(mode.value)


ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help="Read through this tracekit serve (default: the server holding the store, if any).",
    ),
]


WaitOption = Annotated[
    float,
    typer.Option(
        "--wait",
        min=0,
        metavar="SECONDS",
        help="Seconds to wait while another process writes the store (0: fail at once).",
    ),
]


@app.command("tree", cls=PlainCommand)
def tree_command(
    file: Annotated[
        str,
        typer.Argument(help="A trace file (v1 JSONL or OTLP JSON, gzip or not), or - for stdin."),
    ],
    run: Annotated[
        str | None,
        typer.Option(
            "--run", metavar="RUN_ID", help="Show only this run's tree (a root or any child run)."
        ),
    ] = None,
    format: Annotated[
        TreeFormat, typer.Option("--format", help="text (the tree) or json (the steps as data).")
    ] = TreeFormat.text,
    color: Annotated[
        ColorMode, typer.Option("--color", help="Colour the status words; auto honours NO_COLOR.")
    ] = ColorMode.auto,
    max_depth: Annotated[
        int | None,
        typer.Option(
            "--max-depth",
            min=0,
            metavar="N",
            help="Show steps down to this depth (0 is the top level).",
        ),
    ] = None,
    errors: Annotated[
        bool, typer.Option("--errors", help="Show only the paths that lead to a failure.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Any bad line is an error (exit code 2).")
    ] = False,
    show: Annotated[
        list[ShownStep] | None,
        typer.Option("--show", help="Also show these steps: llm (the model turns)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="STORE",
            help="Read the run from this store: the argument is then a RUN_ID.",
        ),
    ] = None,
    wait: WaitOption = DEFAULT_WAIT,
    fold: Annotated[
        bool | None,
        typer.Option(
            "--fold/--no-fold",
            help="Fold repeated sibling subtrees into one line with a count"
            " (default: only sibling lists longer than 20).",
        ),
    ] = None,
    expand: Annotated[
        list[str] | None,
        typer.Option(
            "--expand",
            metavar="PATH",
            help="Show a folded group's steps one by one. PATH: agent names joined by /,"
            " each with an optional [N] among same-named siblings (from 0): batch[2]/sql.",
        ),
    ] = None,
    server: ServerOption = None,
) -> None:
    """Print the delegation tree of a trace: who called whom, and what failed where.

    Bad lines are skipped (stderr says which) unless --strict; whatever was odd
    in the trace (orphans, cycles, duplicates, runs still open) is summed up on stderr.
    With --db, FILE is a run id (a root or a child run) and its tree is read from the store.
    """
    shown = tuple(step.value for step in show or ())
    if db is not None or server is not None:
        from tracekit.cli.tree import store_tree_view

        view = store_tree_view(
            db,
            file,
            run=run,
            fmt=format.value,
            max_depth=max_depth,
            errors_only=errors,
            color=_use_color(color),
            wait=wait,
            show=shown,
            fold=fold,
            expand=expand or (),
            server=server,
        )
        print_view(view.stdout, view.stderr)
        return
    from tracekit.cli.tree import print_tree

    print_tree(
        file, run, format.value, color.value, max_depth, errors, strict, shown, fold, expand or []
    )


# --- diff ---------------------------------------------------------------------


@app.command("diff", cls=PlainCommand)
def diff_command(
    run_a: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A",
            help="The run before: FILE, FILE#RUN_ID, or with --db a run id in the store.",
        ),
    ],
    run_b: Annotated[
        str | None,
        typer.Argument(metavar="RUN_B", help="The run after (the same forms as RUN_A)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", metavar="STORE", help="Read run ids (not files) from this store."),
    ] = None,
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            metavar="RUN_ID",
            help="The run of a file to compare: once for both sides, twice for A then B.",
        ),
    ] = None,
    slower: Annotated[
        str | None,
        typer.Option(
            "--slower",
            metavar="THRESHOLD",
            help="Report a call as slower past this: 50% or 200ms (default: +50% and +20ms).",
        ),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    color: Annotated[
        ColorMode, typer.Option("--color", help="Colour the signs; auto honours NO_COLOR.")
    ] = ColorMode.auto,
    no_color: Annotated[bool, typer.Option("--no-color", help="Same as --color never.")] = False,
    against_fleet: Annotated[
        bool,
        typer.Option(
            "--against-fleet",
            help="Compare RUN_A with the other runs of its root agent in --db instead.",
        ),
    ] = False,
    rare: Annotated[
        str,
        typer.Option(
            "--rare", metavar="SHARE", help="With --against-fleet: rare below this share of runs."
        ),
    ] = "5%",
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """Compare two runs: the calls added, removed, changed status or slower.

    The delegation trees are aligned by agent and caller node under the same
    path; among same-named siblings, the same shape pairs first, then order.
    With --against-fleet, list this run's calls that are rare for its root
    agent, and the usual ones it lacks.
    """
    from tracekit.cli.diff import against_fleet_view, diff_view

    fmt = "json" if json else "text"
    if against_fleet:
        if db is None or run_b is not None:
            raise typer.BadParameter("--against-fleet takes one RUN and --db STORE")
        print_view(against_fleet_view(run_a, db=db, rare_below=rare, fmt=fmt, wait=wait), [])
        return
    if run_b is None:
        raise typer.BadParameter("give two runs to compare (or --against-fleet --db STORE)")
    runs = list(run or [])
    if len(runs) > 2:
        raise typer.BadParameter("--run is given at most twice (A, then B)")
    sides = (runs[0], runs[-1]) if runs else (None, None)
    view = diff_view(
        run_a,
        run_b,
        db=db,
        runs=sides,
        slower=slower,
        fmt=fmt,
        color=not no_color and _use_color(color),
        wait=wait,
    )
    print_view(view.stdout, [])


# --- ingest, runs, rejects, sql, simulate -------------------------------------


class SimFormat(enum.StrEnum):
    """Output formats of ``tracekit simulate``."""

    tracekit = "tracekit"
    otlp = "otlp"


class IngestFormat(enum.StrEnum):
    """Input formats of ``tracekit ingest``: ``auto`` looks at the content."""

    auto = "auto"
    tracekit = "tracekit"
    otlp = "otlp"


@app.command("simulate", cls=PlainCommand)
def simulate_command(
    out: Annotated[
        str,
        typer.Option(
            "--out", "-o", metavar="FILE", help="File to write; - is stdout, a .gz name is gzipped."
        ),
    ] = "fleet.jsonl",
    runs: Annotated[int, typer.Option(min=0, metavar="N", help="How many root runs.")] = 1000,
    events: Annotated[
        int | None,
        typer.Option(
            min=0, metavar="N", help="Instead of --runs: write at least this many records."
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            metavar="N", help="With --start, the same seed and options give the same bytes."
        ),
    ] = 0,
    format: Annotated[
        SimFormat, typer.Option("--format", help="tracekit (v1 JSONL) or otlp (OTLP JSON lines).")
    ] = SimFormat.tracekit,
    start: Annotated[
        str | None,
        typer.Option(
            metavar="TIME",
            help="When the window opens: RFC 3339 or milliseconds"
            " (default: so that the window ends now; give one for the same bytes each time).",
        ),
    ] = None,
    window: Annotated[
        str, typer.Option(metavar="SPAN", help="How long the window is: 90s, 30m, 24h, 7d.")
    ] = "24h",
    truth: Annotated[
        str | None,
        typer.Option(metavar="FILE", help="Also write each run's expected class here (JSONL)."),
    ] = None,
    gzip: Annotated[
        bool | None,
        typer.Option(
            "--gzip/--no-gzip", help="Compress the output (default: when its name ends in .gz)."
        ),
    ] = None,
    failure_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Runs where a child fails (failed:child).")
    ] = 0.06,
    recursion_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Runs that delegate round a circle.")
    ] = 0.02,
    refusal_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Runs failed by a refused call.")
    ] = 0.03,
    handled_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Runs where a failure is caught (degraded).")
    ] = 0.08,
    cancel_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Runs cancelled part-way.")
    ] = 0.02,
    crash_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Runs that crash: no exits, no end.")
    ] = 0.01,
) -> None:
    """Write a seeded fleet of simulated runs, and optionally its ground truth."""
    from tracekit.simulation.simulator import (
        SimulationRates,
        describe_report,
        parse_duration_ms,
        simulate,
    )

    rates = SimulationRates(
        failure=failure_rate,
        recursion=recursion_rate,
        refusal=refusal_rate,
        handled=handled_rate,
        cancel=cancel_rate,
        crash=crash_rate,
    )
    report = simulate(
        out,
        runs=None if events is not None else runs,
        events=events,
        seed=seed,
        format=format.value,
        start=start,
        window_ms=parse_duration_ms(window),
        rates=rates,
        truth=truth,
        compress=gzip,
    )
    print(describe_report(report), file=sys.stderr)


class TableFormat(enum.StrEnum):
    """Output formats of the store's listings."""

    table = "table"
    json = "json"
    csv = "csv"


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="STORE",
        help="The store file (default $TRACEKIT_DB, else ./tracekit.duckdb).",
    ),
]
FormatOption = Annotated[
    TableFormat, typer.Option("--format", help="table, json (one object per line) or csv.")
]

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


@app.command("ingest", cls=PlainCommand)
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
) -> None:
    """Load traces into the store; every line is accounted for on the last line printed.

    A file ingested again adds nothing; a file that grew is read from where the
    last ingest stopped. Bad lines go to the rejects table (tracekit rejects).
    A new store into which nothing went (a missing file, no trace) is not kept.
    """
    from tracekit.cli.ingest import ingest_into
    from tracekit.cli.progress import progress_bar
    from tracekit.cli.remote import server_url

    url = server_url(db, None)
    if url is not None:  # tracekit serve holds the store: it loads what it is sent
        _forward(paths, url)
        return
    report = ingest_into(db, paths, format.value, progress_bar())
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
        if source.spans is not None:  # OTLP: where every span read went
            print(f"  {source.spans.line()}")
    if report.totals.rejected:
        bad = plural(report.totals.rejected, "bad line")
        print(f"{bad} kept in the rejects table: tracekit rejects")
    print(report.reconciliation())


def _forward(paths: list[str], url: str) -> None:
    from tracekit.cli.forward import forward_files

    sent = forward_files(paths, url)
    print(
        f"the store is held by tracekit serve at {url}: sent {sent.records} records"
        f" (POST /v1/records) and {sent.documents} OTLP documents (POST /v1/traces);"
        f" the server loads them (GET {url}/api/ingest, tracekit rejects)"
    )


@app.command("runs", cls=PlainCommand)
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

    with open_reader(db, server, wait) as store:
        df = store.runs(
            status=status, service=service, agent=agent, since=since, limit=limit, session=session
        )
    if format is TableFormat.table:
        df = df[_RUN_COLUMNS]
    _emit(df, format)


@app.command("session", cls=PlainCommand)
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


@app.command("rejects", cls=PlainCommand)
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

    with open_reader(db, None, wait) as store:
        df = store.rejects(limit=limit)
    if format is TableFormat.table:
        df = df[["source", "line", "reason", "raw"]]
    _emit(df, format)


@app.command("sql", cls=PlainCommand)
def sql_command(
    query: Annotated[str, typer.Argument(help="A SELECT query over the store's tables.")],
    db: DbOption = None,
    format: FormatOption = TableFormat.table,
    wait: WaitOption = DEFAULT_WAIT,
    server: ServerOption = None,
) -> None:
    """Run one SELECT on the store, read-only (tables: see docs/store.md)."""
    from tracekit.cli.remote import open_reader

    with open_reader(db, server, wait) as store:
        df = store.sql(query)
    _emit(df, format)


@app.command("find", cls=PlainCommand)
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


def _emit(df: Any, format: TableFormat) -> None:
    emit(df, format.value)


def _clean(text: str) -> str:
    """Escape control characters in a name for the terminal."""
    from tracekit.cli.tables import clean

    return clean(text)


# --- fleet, dashboard ---------------------------------------------------------


class FleetFormat(enum.StrEnum):
    """Output formats of ``tracekit fleet``."""

    table = "table"
    json = "json"


_FleetDb = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="STORE",
        help="The store file (default $TRACEKIT_DB, else ./tracekit.duckdb).",
    ),
]
_Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="SPAN|TIME",
        help="Runs started this long ago or later: 30m, 24h, 7d, or an ISO time.",
    ),
]
_Service = Annotated[
    str | None, typer.Option("--service", metavar="NAME", help="Only this service.")
]
_Agent = Annotated[
    str | None,
    typer.Option(
        "--agent", metavar="NAME", help="Only runs that invoked this agent (calls by or to it)."
    ),
]


class Percentiles(enum.StrEnum):
    """How ``tracekit fleet`` computes latency percentiles."""

    exact = "exact"
    approx = "approx"


class LakeEngine(enum.StrEnum):
    """What reads a lake for ``tracekit fleet --lake``."""

    duckdb = "duckdb"
    spark = "spark"


@app.command("export", cls=PlainCommand)
def export_command(
    to: Annotated[
        str, typer.Option("--to", metavar="DIR", help="The lake folder (created if missing).")
    ],
    db: _FleetDb = None,
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


@app.command("fleet", cls=PlainCommand)
def fleet_command(
    db: _FleetDb = None,
    since: _Since = None,
    service: _Service = None,
    agent: _Agent = None,
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

    print_fleet(
        db,
        since,
        service,
        agent,
        format.value,
        color.value,
        wait,
        server=server,
        lake=lake,
        engine=engine.value,
        remote=remote,
        percentiles=percentiles.value,
        limit=limit,
        offset=offset,
    )


@app.command("dashboard", cls=PlainCommand)
def dashboard_command(
    out: Annotated[
        str, typer.Option("--out", "-o", metavar="FILE", help="The HTML file to write.")
    ] = "dashboards/fleet-health.html",
    db: _FleetDb = None,
    since: _Since = None,
    service: _Service = None,
    agent: _Agent = None,
    wait: WaitOption = DEFAULT_WAIT,
    server: ServerOption = None,
) -> None:
    """Write the fleet-health dashboard: one HTML file that opens offline in any browser."""
    from tracekit.cli.remote import server_url
    from tracekit.dashboards.page import save_page, write_dashboard

    url = server_url(db, server)
    if url is not None:
        from tracekit.server.client import ServerClient

        page = ServerClient(url).dashboard(since=since, service=service, agent=agent)
        path = save_page(out, page)
    else:
        path = write_dashboard(out, db=db, since=since, service=service, agent=agent, wait=wait)
    print(f"dashboard written to {path}", file=sys.stderr)


# --- entry point ---------------------------------------------------------------


@app.command("serve", cls=PlainCommand)
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
            help="Require 'Authorization: Bearer TOKEN' on every request.",
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
) -> None:
    """Collect OTLP traces live into the store (POST /v1/traces), until Ctrl-C or SIGTERM.

    Point any OpenTelemetry exporter at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318.
    Every batch acknowledged is on disk first; a restart after a crash loads what was not
    yet stored. tracekit's own records go to POST /v1/records (application/x-ndjson).
    """
    from pathlib import Path

    from tracekit.server import ServeConfig, serve
    from tracekit.store.db import default_path

    path = Path(db) if db is not None else default_path()
    config = ServeConfig(path, host=host, port=port, grpc_port=grpc_port, token=token)
    config.max_body, config.spool_limit = max_body, spool_limit
    config.allow_hosts = list(allow_host or [])
    options = None
    if lake is not None:
        from tracekit.server.lake_export import LakeOptions, every_seconds

        options = LakeOptions(Path(lake), every_seconds(export_every), writer)
    serve(config, lake=options)


def run_app() -> None:
    """Run the typer app on ``sys.argv``: what :func:`tracekit.cli.entry.main` does
    with any command line it does not run itself."""
    try:
        app(standalone_mode=False)
    except TracekitError as exc:
        fail(exc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("interrupted (SIGINT)", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: typer's (vendored click's) message
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            print(f"Error: {exc.format_message()}", file=sys.stderr)
        sys.exit(exc.exit_code)
