"""The outcomes a run can have, apart from the rules that find them (no imports).

A report that lists outcomes or tells crashed runs from running ones needs
these names and nothing of :mod:`tracekit.failures.rules` (which loads the
event model). The vocabulary lives in layer 0 so that the palettes
(:mod:`tracekit._util.theme`) are built from it; :mod:`tracekit.failures.outcomes`
re-exports it for the rules and the readers above them.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

__all__ = ["OUTCOMES", "STALE_AFTER_MS", "Outcome"]

Outcome: TypeAlias = Literal[  # in the order a report lists them
    "ok",
    "degraded",
    "failed:recursion",
    "failed:child",
    "failed:refused",
    "cancelled",
    "incomplete",
]

#: Every outcome, in the order a report lists them (healthy first).
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)
#: An incomplete run quiet for longer than this is taken as crashed (15 minutes).
STALE_AFTER_MS: Final = 15 * 60_000.0
