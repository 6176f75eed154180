"""The ``tracekit`` command. Each command is a thin wrapper over a library call.

This is the only module that imports typer. It catches :class:`TracekitError`
alone: the user gets ``Error: ...`` and what to do next, and exit code 2; any
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Annotated

import typer

from tracekit.describe import tree_view
from tracekit.errors import TracekitError

app = typer.Typer(
    name="tracekit",
    help="See who called whom in multi-agent systems, and what failed where.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """See who called whom in multi-agent systems, and what failed where."""
    # A callback keeps `tracekit <command>` a group even while it has one command.


# --- tree (issue 2) ------------------------------------------------------------


class TreeFormat(enum.StrEnum):
    """Output formats of ``tracekit tree``."""

    text = "text"
    json = "json"


class ColorMode(enum.StrEnum):
    """When to colour: ``auto`` is on a terminal unless NO_COLOR is set."""

    auto = "auto"
    always = "always"
    never = "never"


def _use_color(mode: ColorMode) -> bool:
    if mode is ColorMode.auto:
        return not os.environ.get("NO_COLOR") and sys.stdout.isatty()
    return mode is ColorMode.always


def _print_view(stdout: str, stderr: list[str]) -> None:
    """Write the output, then the notes; a closed pipe (``| head``) is not an error."""
    try:
        if stdout:
            sys.stdout.write(stdout + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    for line in stderr:
        print(line, file=sys.stderr)


@app.command("tree")
def tree_command(
    file: Annotated[
        str,
        typer.Argument(help="A trace file (v1 JSONL or OTLP JSON, gzip or not), or - for stdin."),
    ],
    run: Annotated[
        str | None,
        typer.Option("--run", help="Show only this run's tree (a root or any child run)."),
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
            "--max-depth", min=0, help="Show steps down to this depth (0 is the top level)."
        ),
    ] = None,
    errors: Annotated[
        bool, typer.Option("--errors", help="Show only the paths that lead to a failure.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Any bad line is an error (exit code 2).")
    ] = False,
) -> None:
    """Print the delegation tree of a trace: who called whom, and what failed where.

    Bad lines are skipped (stderr says which) unless --strict; whatever was odd
    in the trace (orphans, cycles, duplicates, runs still open) is summed up on stderr.
    """
    view = tree_view(
        file,
        run_id=run,
        fmt=format.value,
        max_depth=max_depth,
        errors_only=errors,
        color=_use_color(color),
        strict=strict,
    )
    _print_view(view.stdout, view.stderr)


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
    except typer.TyperException as exc:  # usage errors: typer's (vendored click's) message
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            print(f"Error: {exc.format_message()}", file=sys.stderr)
        sys.exit(exc.exit_code)


def _fail(exc: TracekitError) -> None:
    message = f"Error: {exc}"
    if exc.hint:
        message += f"\n{exc.hint}"
    print(message, file=sys.stderr)
    sys.exit(2)
