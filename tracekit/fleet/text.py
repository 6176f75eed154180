"""The fleet report as terminal text: rich tables (:func:`tracekit.cli.fleet.render_fleet`).

Names from traces are data: each cell is a rich ``Text`` (so ``[red]`` in an
agent's name is not markup) with control characters escaped
(:func:`tracekit.tree.text.escape`), so a name cannot move the cursor or
change colours.

Example:
    >>> from tracekit.fleet import fleet_report
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     print(render_fleet(fleet_report(store, since="24h"), width=100))
    Fleet health: runs started ... to ... UTC
    <BLANKLINE>
    Runs: 40 (no runs in the previous window)
    ┏━━━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━━━┓
    ┃ outcome          ┃ runs ┃ share ┃ before ┃ change ┃
    ┡━━━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━━━┩
    │ ok               │   34 │ 85.0% │      - │      - │
    │ degraded         │    4 │ 10.0% │      - │      - │
    │ failed:recursion │    1 │  2.5% │      - │      - │
    │ failed:child     │    1 │  2.5% │      - │      - │
    │ failed:refused   │    0 │  0.0% │      - │      - │
    │ cancelled        │    0 │  0.0% │      - │      - │
    │ incomplete       │    0 │  0.0% │      - │      - │
    └──────────────────┴──────┴───────┴────────┴────────┘
    <BLANKLINE>
    Sessions: ... with a failed run; 40 runs in sessions)
    <BLANKLINE>
    Recursion circles (wrong by construction: act on each, even once)
    ...

Only this module imports rich for the report: ``--format json`` does without it.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from tracekit._util.text import escape, format_ms, plural
from tracekit._util.theme import OUTCOME_STYLES
from tracekit.store import FleetFilter, Rows

__all__ = ["FleetLike", "render_fleet", "renderables"]

_ROWS: Final = 15  # rows shown per table; --format json has them all


class FleetLike(Protocol):
    """What the tables read of a report (:class:`tracekit.fleet.report.FleetReport`).

    The report draws itself with this module (``__rich_console__``), so this
    module names only what it reads and never imports the report: the two
    would import each other.
    """

    @property
    def filter(self) -> FleetFilter: ...
    @property
    def runs(self) -> int: ...
    @property
    def incomplete(self) -> dict[str, int]: ...
    @property
    def tables(self) -> dict[str, Rows]: ...
    @property
    def previous_runs(self) -> int | None: ...
    @property
    def sessions(self) -> dict[str, int]: ...
    @property
    def totals(self) -> dict[str, int]: ...
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The report as rich tables (:func:`renderables`)."""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text(value: Any, style: str = "") -> Text:
    if _missing(value):
        return Text("-", style="dim")
    if isinstance(value, datetime):
        return Text(value.strftime("%Y-%m-%d %H:%M"), style=style)
    return Text(escape(str(value)), style=style)


def _pct(value: Any) -> Text:
    if _missing(value):
        return Text("-", style="dim")
    return Text(f"{100 * float(value):.1f}%")


def _ms(value: Any) -> Text:
    if _missing(value):
        return Text("-", style="dim")
    return Text(format_ms(float(value)))


def _change(value: Any) -> Text:
    if _missing(value):
        return Text("-", style="dim")
    points = 100 * float(value)
    return Text(
        f"{points:+.1f} pt", style="red" if points > 0.05 else "green" if points < -0.05 else ""
    )


def _table(
    title: str,
    columns: Sequence[str],
    rows: Rows,
    cells: Callable[[dict[str, Any]], Sequence[Text]],
    empty: str,
    total: int | None = None,
) -> Table | Text:
    """A table of the first rows; ``total``: the list's full length when ``rows`` is a page."""
    if not rows:
        return Text(f"{title}: {empty}", style="dim")
    more = len(rows) - _ROWS
    caption = f"{more} more: --format json lists them all" if more > 0 else None
    if total is not None and total > len(rows):
        shown = min(len(rows), _ROWS)
        caption = f"{shown:,} of {total:,} shown: --limit and --offset page through them"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for column in columns:
        table.add_column(
            column, justify="right" if column[:1].isdigit() or column in _NUMERIC else "left"
        )
    for row in rows.records()[:_ROWS]:
        table.add_row(*cells(row))
    return table


_NUMERIC: Final = frozenset(
    {
        "runs",
        "share",
        "before",
        "change",
        "calls",
        "failed",
        "rate",
        "p50",
        "p95",
        "p99",
        "failure rate",
        "depth",
        "own p50",
        "own p95",
        "input",
        "output",
        "median input",
        "median output",
        "revisits",
        "model calls",
        "time",
        "tokens/run",
        "time/run",
    }
)


def _outcomes(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        name = row["outcome"]
        label = name
        if name == "incomplete" and row["runs"]:
            label += (
                f" ({report.incomplete['crashed']} crashed, {report.incomplete['running']} running)"
            )
        return [
            Text(label, style=OUTCOME_STYLES.get(name, "")),
            Text(f"{row['runs']:,}"),
            _pct(row["share"]),
            _pct(row["previous_share"]),
            _change(row["change"]),
        ]

    title = f"Runs: {report.runs:,}"
    if report.previous_runs == 0:
        title += " (no runs in the previous window)"
    elif report.previous_runs is not None:
        title += f" (previous window: {report.previous_runs:,})"
    return _table(
        title,
        ["outcome", "runs", "share", "before", "change"],
        report.tables["outcomes"],
        cells,
        "none",
    )


def _circles(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        new = row.get("new")
        flag = "ACT: new" if new is True else "ACT"
        return [
            Text(flag, style="bold magenta"),
            _text(row["circle"], "magenta"),
            Text(f"{row['runs']:,}"),
            _text(row["services"]),
            _text(row["first_seen"]),
            _text(row["last_seen"]),
        ]

    return _table(
        "Recursion circles (wrong by construction: act on each, even once)",
        ["", "circle", "runs", "services", "first seen", "last seen"],
        report.tables["circles"],
        cells,
        "none seen",
        report.totals.get("circles"),
    )


def _failures(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        return [
            _text(row["origin_agent"]),
            _text(row["origin_code"]),
            _text(row["outcome"].split(":")[-1]),
            Text(f"{row['runs']:,}"),
            _pct(row["share"]),
            _pct(row["rate"]),
        ]

    return _table(
        "Failures by origin (where they began, however deep)",
        ["origin agent", "code", "kind", "runs", "share", "rate"],
        report.tables["failures"],
        cells,
        "none",
    )


def _degraded(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        return [
            _text(row["run_id"]),
            _text(row["start_at"]),
            _text(row["service"]),
            _text(row["origin_agent"]),
            _text(row["origin_code"]),
        ]

    total = {r["outcome"]: r["runs"] for r in report.tables["outcomes"].records()}["degraded"]
    return _table(
        f"Degraded runs: ended ok, a delegation or a step inside failed ({total:,}; newest)",
        ["run", "started", "service", "failed agent", "code"],
        report.tables["degraded"],
        cells,
        "none",
        report.totals.get("degraded"),
    )


def _latency(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        return [
            _text(row["agent"]),
            Text(f"{row['calls']:,}"),
            Text(f"{row['failed']:,}"),
            _ms(row["p50_ms"]),
            _ms(row["p95_ms"]),
            _ms(row["p99_ms"]),
            _ms(row.get("own_p50_ms")),
            _ms(row.get("own_p95_ms")),
        ]

    return _table(
        "Latency by agent (own: less the time its own calls took; slowest own p95 first)",
        ["agent", "calls", "failed", "p50", "p95", "p99", "own p50", "own p95"],
        report.tables["latency"],
        cells,
        "no calls",
    )


def _tokens(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        return [
            _text(row["agent"]),
            Text(f"{row['calls']:,}"),
            _count(row["input_tokens"]),
            _count(row["output_tokens"]),
            _count(row["median_input_tokens"]),
            _count(row["median_output_tokens"]),
        ]

    return _table(
        "Tokens by agent (its own model calls)",
        ["agent", "calls", "input", "output", "median input", "median output"],
        report.tables.get("tokens", Rows((), (), [])),
        cells,
        "no usage reported",
    )


def _loops(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        stopped = row["stopped"]
        return [
            _text(row["circle"], "magenta"),
            _text(stopped, _STOPPED_STYLES.get(stopped, "")),
            Text(f"{row['runs']:,}"),
            _count(row["revisits"]),
            _count(row["model_calls"]),
            _count(row["input_tokens"]),
            _count(row["output_tokens"]),
            _ms(row["duration_ms"]),
            _count(row["tokens_per_run"]),
            _ms(row["ms_per_run"]),
        ]

    rows = report.tables.get("loops", Rows((), (), []))
    return _table(
        "Loop cost by circle and how it stopped (silent and finished loops burn tokens too)",
        ["circle", "stopped", "runs", "revisits", "model calls", "input", "output", "time",
         "tokens/run", "time/run"],
        rows,
        cells,
        "no agents went round a circle",
        report.totals.get("loops"),
    )  # fmt: skip


# A loop that stopped without a word is the one to see: it reads as healthy elsewhere.
_STOPPED_STYLES: Final = {"limit": "red", "silent": "bold yellow", "refused": "magenta"}


def _count(value: Any) -> Text:
    if _missing(value):
        return Text("-", style="dim")
    return Text(f"{float(value):,.0f}")


def _sessions(report: FleetLike) -> Text:
    found = report.sessions
    if not found or not found.get("sessions"):
        return Text("Sessions: none (no run has a session id)", style="dim")
    return Text(
        f"Sessions: {found['sessions']:,} ({found['failed']:,} with a failed run;"
        f" {plural(found['runs'], 'run')} in sessions)"
    )


def _edges(report: FleetLike) -> Table | Text:
    def cells(row: dict[str, Any]) -> list[Text]:
        return [
            _text(row["caller"]),
            _text(row["callee"]),
            Text(f"{row['calls']:,}"),
            Text(f"{row['failed']:,}"),
            _pct(row["failure_rate"]),
        ]

    return _table(
        "Delegations (caller -> callee)",
        ["caller", "callee", "calls", "failed", "failure rate"],
        report.tables["edges"],
        cells,
        "none",
    )


def _window(report: FleetLike) -> Text:
    flt = report.filter
    parts = []
    if flt.start is not None:
        parts.append(f"runs started {flt.start:%Y-%m-%d %H:%M} to {flt.end:%Y-%m-%d %H:%M} UTC")
    else:
        parts.append("every run in the store")
    if flt.service:
        parts.append(f"service {escape(flt.service)}")
    if flt.agent:
        parts.append(f"agent {escape(flt.agent)}")
    return Text("Fleet health: " + ", ".join(parts), style="bold")


def render_fleet(report: FleetLike, *, width: int = 120, color: bool = False) -> str:
    """The report as rich tables, one after another, at a fixed width."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        emoji=False,
    )
    console.print(report)
    return out.getvalue().rstrip("\n")


def renderables(report: FleetLike) -> Iterator[RenderableType]:
    """The window line, then each table, a blank line before each."""
    yield _window(report)
    parts = (
        _outcomes,
        _sessions,
        _circles,
        _loops,
        _failures,
        _degraded,
        _latency,
        _tokens,
        _edges,
    )
    for part in parts:
        yield Text()
        yield part(report)
