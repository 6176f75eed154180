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


@app.command()
def simulate(
    out: str = typer.Option("fleet.jsonl", "--out", "-o", help="File to write ('-': stdout; .gz: gzipped)."),
    runs: int | None = typer.Option(None, "--runs", help="How many root runs [default: 1000]."),
    events: int | None = typer.Option(None, "--events", help="Write runs until this many v1 records."),
    seed: int = typer.Option(0, "--seed", help="Same seed and options, same bytes."),
    format: str = typer.Option("tracekit", "--format", help="tracekit (v1 JSONL) or otlp (OTLP JSON)."),
    start: str = typer.Option("2026-01-05T00:00:00Z", "--start", help="Window start (RFC 3339 or ms)."),
    window: str = typer.Option("24h", "--window", help="Window length: 90s, 30m, 24h, 7d."),
    truth: str | None = typer.Option(None, "--truth", help="Also write each run's expected class (JSONL)."),
    gzip: bool | None = typer.Option(None, "--gzip/--no-gzip", help="Compress [default: by .gz name]."),
    failure_rate: float = typer.Option(0.06, help="Share of runs where a child fails (failed:child)."),
    recursion_rate: float = typer.Option(0.02, help="Share of runs with a recursion circle."),
    refusal_rate: float = typer.Option(0.03, help="Share of runs failed by a refused call."),
    handled_rate: float = typer.Option(0.08, help="Share of runs with a failure caught (degraded)."),
    cancel_rate: float = typer.Option(0.02, help="Share of runs cancelled part-way."),
    crash_rate: float = typer.Option(0.01, help="Share of runs that crash (no end)."),
) -> None:
    """Write a seeded, reproducible fleet of simulated runs (and its ground truth)."""
    from tracekit import simulate as sim

    rates = sim.SimulationRates(
        failure=failure_rate,
        recursion=recursion_rate,
        refusal=refusal_rate,
        handled=handled_rate,
        cancel=cancel_rate,
        crash=crash_rate,
    )
    if format not in ("tracekit", "otlp"):
        raise typer.BadParameter("must be tracekit or otlp", param_hint="--format")
    report = sim.simulate(
        out,
        runs=runs,
        events=events,
        seed=seed,
        format=format,  # type: ignore[arg-type]
        start=start,
        window_ms=sim.parse_duration_ms(window),
        rates=rates,
        truth=truth,
        compress=gzip,
    )
    shares = ", ".join(f"{name} {count}" for name, count in sorted(report.outcomes.items()))
    where = "stdout" if out == "-" else out
    print(f"wrote {report.runs:,} runs, {report.events:,} events to {where} ({shares})", file=sys.stderr)


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
