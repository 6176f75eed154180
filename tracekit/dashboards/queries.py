"""What the dashboard reads beyond the fleet report: the store's reads the pages use.

The store owns their SQL (:mod:`tracekit.store.page_reads`): every row of a
table the page pages through, example runs, each agent's origins, the calls
and summary lines of the runs embedded, the store's span.
"""

from __future__ import annotations

from tracekit.store import (
    StoreSpan,
    circle_examples,
    origin_failures,
    run_calls,
    run_summaries,
    store_span,
)

__all__ = [
    "StoreSpan",
    "circle_examples",
    "origin_failures",
    "run_calls",
    "run_summaries",
    "store_span",
]
