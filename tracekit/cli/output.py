"""Writing a command's output and its errors, without typer: what every command prints through.

The plain command lines (:mod:`tracekit.cli.entry`) run without importing
typer, and the typer commands (:mod:`tracekit.cli.app`) print the same way, so
both share these: the output then the notes (a closed pipe is not an error),
a listing as a table fit to the terminal, JSON lines or CSV, one ``Error:``
line for a :class:`~tracekit.errors.TracekitError`, and the early exit of a
command whose work is done.

Example:
    >>> use_color("never")
    False
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, NoReturn

from tracekit.errors import IngestInterrupted, TracekitError

__all__ = ["FAST_EXIT", "HELD", "emit", "exit_now", "fail", "print_view", "use_color"]

# A command whose work is done and whose output is flushed may ask main() to
# end the process at once: tearing down a million-record forest object by
# object took 0.25 s of a 3.3 s `tracekit tree` (BENCHMARKS.md). Only main()
# (the console script) acts on it; in-process callers (CliRunner) never exit.
FAST_EXIT: list[int] = []
HELD: list[object] = []


def use_color(mode: str) -> bool:
    """``auto`` colours on a terminal unless NO_COLOR is set; ``always``, ``never``."""
    if mode == "auto":
        return not os.environ.get("NO_COLOR") and sys.stdout.isatty()
    return mode == "always"


def print_view(stdout: str, stderr: list[str]) -> None:
    """Write the output, then the notes; a closed pipe (``| head``) is not an error."""
    try:
        if stdout:
            sys.stdout.write(stdout + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    for line in stderr:
        print(line, file=sys.stderr)


def emit(df: Any, fmt: str) -> None:
    """A listing (a DataFrame or a :class:`~tracekit._util.plain_frame.PlainFrame`) as text.

    ``fmt`` is ``table``, ``json`` or ``csv``.
    """
    from tracekit.cli.tables import fit, render

    if df.empty and fmt == "table":
        print("(no rows)", file=sys.stderr)
        return
    if fmt != "table":  # JSON and CSV keep every column and character
        print_view(render(df, fmt), [])
        return
    # A table fits the terminal ($COLUMNS, else 80 off a terminal): the columns
    # that do not fit are named on stderr, and --format csv or json has them.
    width = shutil.get_terminal_size().columns
    shown, hidden = fit(df, width)
    note = [f"not shown at this width: {', '.join(hidden)} (--format csv or json has them)"]
    print_view(render(shown, "table", width=width), note if hidden else [])


def exit_now(code: int) -> None:
    """Flush what was written, then end the process without freeing its objects."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        return  # let the normal exit deal with a closed stream
    os._exit(code)


def fail(exc: TracekitError) -> NoReturn:
    """One ``Error:`` line and its hint on stderr, exit 2 (an asked-for stop: the shell's code)."""
    if isinstance(exc, IngestInterrupted):  # asked for: no "Error", the shell's exit code
        print(str(exc), file=sys.stderr)
        sys.exit(128 + exc.signum)
    message = f"Error: {exc}"
    if exc.hint:
        message += f"\n{exc.hint}"
    print(message, file=sys.stderr)
    sys.exit(2)
