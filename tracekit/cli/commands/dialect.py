"""``tracekit dialect suggest``: a starting dialect declaration for a trace's spans."""

from __future__ import annotations

from typing import Annotated

import typer

from tracekit.cli.help import PlainCommand, PlainGroup

__all__ = ["dialect_app"]

dialect_app = typer.Typer(
    name="dialect",
    help="Declare how your app writes its spans (docs/otel-apps.md).",
    no_args_is_help=True,
    add_completion=False,
    cls=PlainGroup,
)


@dialect_app.command("suggest", cls=PlainCommand)
def suggest_command(
    file: Annotated[str, typer.Argument(help="An OTLP JSON trace file (gzip or not).")],
) -> None:
    """Print a dialect declaration (TOML) read from the file's spans: check it, then pass it
    with --dialect to tracekit tree and tracekit ingest."""
    from tracekit.intake.otlp.suggest import suggest_dialect

    print(suggest_dialect(file), end="")
