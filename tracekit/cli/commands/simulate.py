"""``tracekit simulate``: a seeded fleet of simulated runs."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tracekit.cli.commands.options import SimFormat


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
