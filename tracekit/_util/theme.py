"""The one palette: every colour a status or an outcome has, in every rendering.

A recursion circle has a colour of its own everywhere (it is wrong by
construction, not a failure like another); HTML and plotly take the hex
colours, the terminal tree its ANSI codes, the fleet tables rich's styles.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CODE_COLORS",
    "NEUTRAL",
    "OUTCOME_COLORS",
    "OUTCOME_STYLES",
    "RECURSION_COLOR",
    "STATUS_ANSI",
    "STATUS_COLORS",
]

#: A recursion circle, wherever it is drawn.
RECURSION_COLOR: Final = "#8250df"
#: Text, marks and anything without a status.
NEUTRAL: Final = "#57606a"

#: One colour for each invocation status (the tree's HTML, the run figures).
STATUS_COLORS: Final[dict[str, str]] = {
    "ok": "#1a7f37",
    "error": "#cf222e",
    "refused": "#bc4c00",
    "cancelled": "#6e7781",
    "pending": "#9a6700",
    "running": "#0969da",
}

#: The same statuses in the terminal: SGR colour codes.
STATUS_ANSI: Final[dict[str, str]] = {
    "ok": "32",
    "error": "31",
    "refused": "35",
    "cancelled": "33",
    "pending": "33",
    "running": "36",
}

#: One colour per fleet outcome (the dashboard).
OUTCOME_COLORS: Final[dict[str, str]] = {
    "ok": "#2da44e",
    "degraded": "#d4a72c",
    "failed:recursion": RECURSION_COLOR,
    "failed:child": "#cf222e",
    "failed:refused": "#e16f24",
    "cancelled": "#8c959f",
    "incomplete": "#218bff",
}

#: The same outcomes in the terminal's fleet tables: rich styles.
OUTCOME_STYLES: Final[dict[str, str]] = {
    "ok": "green",
    "degraded": "yellow",
    "failed:recursion": "bold magenta",
    "failed:child": "red",
    "failed:refused": "red",
    "cancelled": "dim",
    "incomplete": "cyan",
}

#: Error codes and agents in the dashboard's bar charts, in turn.
CODE_COLORS: Final = (
    "#cf222e", "#e16f24", "#bf8700", "#8250df", "#0969da", "#1a7f37", "#bc4c00",
    "#6e7781", "#a475f9", "#57606a", "#fa4549", "#54aeff",
)  # fmt: skip
