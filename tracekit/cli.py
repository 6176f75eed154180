"""The ``tracekit`` command. Each command is a thin wrapper over a library call.

This is the only module that imports typer. It catches :class:`TracekitError`
alone: the user gets ``Error: ...`` and what to do next, and exit code 2; any
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys

import click
import typer

from tracekit.errors import TracekitError

app = typer.Typer(
    name="tracekit",
    help="See who called whom in multi-agent systems, and what failed where.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# --- tree (issue 2) ------------------------------------------------------------


# --- ingest, runs, rejects, sql, simulate (issue 4) ----------------------------


# --- fleet, dashboard (issue 5) ------------------------------------------------


# --- entry point ---------------------------------------------------------------


def main() -> None:
    """Run the CLI; turn a TracekitError into one line on stderr and exit 2."""
    try:
        app(standalone_mode=False)
    except TracekitError as exc:
        _fail(exc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except click.ClickException as exc:  # usage errors: click's own one-line message
        exc.show()
        sys.exit(exc.exit_code)


def _fail(exc: TracekitError) -> None:
    message = f"Error: {exc}"
    if exc.hint:
        message += f"\n{exc.hint}"
    print(message, file=sys.stderr)
    sys.exit(2)
