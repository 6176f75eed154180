"""The outcomes a run can have: the rules' vocabulary, re-exported from layer 0.

The names live in :mod:`tracekit._util.outcomes` so that the palettes below the
rules (:mod:`tracekit._util.theme`) are derived from the same tuple; this module
is where the rules and the readers above them import them from.
"""

from __future__ import annotations

from tracekit._util.outcomes import OUTCOMES, STALE_AFTER_MS, Outcome

__all__ = ["OUTCOMES", "STALE_AFTER_MS", "Outcome"]
