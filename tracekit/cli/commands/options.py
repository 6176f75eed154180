"""The values and options the commands share: output formats, --db, --wait, --server.

Typer reads a command's options from its annotations, so an option given the
same way by many commands is one ``Annotated`` alias here.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from tracekit.cli.output import use_color


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


def use_color_mode(mode: ColorMode) -> bool:
    """Whether to colour, by ``--color``: ``auto`` is on a terminal unless NO_COLOR is set."""
    return use_color(mode.value)


#: ``--dialect FILE``: how the user's app writes its spans (tree, ingest).
DialectOption = Annotated[
    list[str] | None,
    typer.Option(
        "--dialect",
        metavar="FILE",
        help="A dialect file (TOML) saying which of your spans are agents and tools"
        " (default: ./tracekit.toml, or [tool.tracekit] in ./pyproject.toml)."
        " See docs/otel-apps.md.",
    ),
]
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


class SimFormat(enum.StrEnum):
    """Output formats of ``tracekit simulate``."""

    tracekit = "tracekit"
    otlp = "otlp"


class IngestFormat(enum.StrEnum):
    """Input formats of ``tracekit ingest``: ``auto`` looks at the content."""

    auto = "auto"
    tracekit = "tracekit"
    otlp = "otlp"


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


class FleetFormat(enum.StrEnum):
    """Output formats of ``tracekit fleet``."""

    table = "table"
    json = "json"


FleetDbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="STORE",
        help="The store file (default $TRACEKIT_DB, else ./tracekit.duckdb).",
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="SPAN|TIME",
        help="Runs started this long ago or later: 30m, 24h, 7d, or an ISO time.",
    ),
]
ServiceOption = Annotated[
    str | None, typer.Option("--service", metavar="NAME", help="Only this service.")
]
AgentOption = Annotated[
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
