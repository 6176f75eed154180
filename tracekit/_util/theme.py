"""The one palette: every colour a status or an outcome has, in every rendering.

A recursion circle has a colour of its own everywhere (it is wrong by
construction, not a failure like another); HTML and plotly take the hex
colours, the terminal tree its ANSI codes, the fleet tables rich's styles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from tracekit._util.outcomes import OUTCOMES

__all__ = [
    "CODE_COLORS",
    "NEUTRAL",
    "OUTCOME_COLORS",
    "OUTCOME_STYLES",
    "RECURSION_COLOR",
    "RESERVED_COLORS",
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

#: How each fleet outcome looks: its colour (the dashboard) and its rich style
#: (the terminal's fleet tables). Keyed by the outcomes themselves; the palettes
#: below are built from :data:`OUTCOMES`, so an outcome without a look (or a look
#: without an outcome) stops the import instead of a render.
_OUTCOME_LOOKS: Final[dict[str, tuple[str, str]]] = {
    "ok": ("#2da44e", "green"),
    "degraded": ("#d4a72c", "yellow"),
    "failed:recursion": (RECURSION_COLOR, "bold magenta"),
    "failed:child": ("#cf222e", "red"),
    "failed:refused": ("#e16f24", "red"),
    "cancelled": ("#8c959f", "dim"),
    "incomplete": ("#218bff", "cyan"),
}


def _palettes(
    outcomes: tuple[str, ...], looks: Mapping[str, tuple[str, str]]
) -> tuple[dict[str, str], dict[str, str]]:
    """The colour and style of every outcome, in the outcomes' order.

    Raises:
        LookupError: When an outcome has no look or a look names no outcome.

    Example:
        >>> _palettes(("ok",), {"ok": ("#2da44e", "green")})
        ({'ok': '#2da44e'}, {'ok': 'green'})
        >>> _palettes(("ok", "new"), {"ok": ("#2da44e", "green")})
        Traceback (most recent call last):
        ...
        LookupError: outcomes without a look in tracekit/_util/theme.py: ['new']
    """
    missing = [o for o in outcomes if o not in looks]
    if missing:
        raise LookupError(f"outcomes without a look in tracekit/_util/theme.py: {missing}")
    stray = sorted(set(looks) - set(outcomes))
    if stray:
        raise LookupError(f"looks for no outcome in tracekit/_util/theme.py: {stray}")
    return {o: looks[o][0] for o in outcomes}, {o: looks[o][1] for o in outcomes}


#: One colour per fleet outcome (the dashboard), and the same outcomes in the
#: terminal's fleet tables as rich styles: one entry per outcome in OUTCOMES.
_PALETTES: Final = _palettes(OUTCOMES, _OUTCOME_LOOKS)
OUTCOME_COLORS: Final[dict[str, str]] = _PALETTES[0]
OUTCOME_STYLES: Final[dict[str, str]] = _PALETTES[1]

#: Every colour that means a status, an outcome or a circle: nothing else may wear one.
RESERVED_COLORS: Final = frozenset(
    {RECURSION_COLOR, NEUTRAL, *STATUS_COLORS.values(), *OUTCOME_COLORS.values()}
)

#: Error codes and agents in the dashboard's charts, in turn. None is a reserved
#: colour or close to one (no red, purple, orange, yellow, green, blue or grey),
#: so a code's bar never reads as an outcome or as recursion.
CODE_COLORS: Final = (
    "#1b7c83", "#bf3989", "#0a3069", "#a0785a", "#4ac2c9",
    "#993366", "#556b2f", "#f49ac1", "#8fd3c1", "#00a3a3",
)  # fmt: skip
