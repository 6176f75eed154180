"""The ``tracekit`` command: the typer app, its root callback, and its commands in order.

Only :mod:`tracekit.cli` imports typer; the plainest command lines run
before it is imported (:mod:`tracekit.cli.entry`). The commands live in
:mod:`tracekit.cli.commands`, a module a group; this module registers them, and
the order here is the order of ``tracekit --help``. It catches
:class:`TracekitError` alone: the user gets ``Error: ...`` and what to do
next, and exit code 2; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tracekit._version import __version__
from tracekit.cli.commands import health, serve, simulate, store, trees
from tracekit.cli.commands.dialect import dialect_app
from tracekit.cli.commands.options import (
    ColorMode,
    FleetFormat,
    IngestFormat,
    TableFormat,
    TreeFormat,
)
from tracekit.cli.help import PlainCommand, PlainGroup
from tracekit.cli.output import fail
from tracekit.errors import TracekitError

__all__ = [
    "ColorMode",
    "FleetFormat",
    "IngestFormat",
    "TableFormat",
    "TreeFormat",
    "app",
    "run_app",
]

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


_COMMANDS = (
    ("tree", trees.tree_command),
    ("diff", trees.diff_command),
    ("simulate", simulate.simulate_command),
    ("ingest", store.ingest_command),
    ("rederive", store.rederive_command),
    ("runs", store.runs_command),
    ("session", store.session_command),
    ("rejects", store.rejects_command),
    ("sql", store.sql_command),
    ("find", store.find_command),
    ("export", health.export_command),
    ("fleet", health.fleet_command),
    ("dashboard", health.dashboard_command),
    ("serve", serve.serve_command),
)
for _name, _command in _COMMANDS:
    app.command(_name, cls=PlainCommand)(_command)
app.add_typer(dialect_app, name="dialect")


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
