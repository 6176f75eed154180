"""The dashboard's own-time and token tables by agent, and the sessions line of the runs card.

Own time is a call's duration less the time its own calls covered, so the
agent that is slow itself stands apart from the ones waiting for it. Tokens
are each agent's own model usage (its callees' are theirs).

Example:
    >>> import pandas as pd
    >>> tokens = pd.DataFrame({"agent": ["<b>sql</b>"], "calls": [2], "input_tokens": [300],
    ...     "output_tokens": [90], "median_input_tokens": [150.0], "median_output_tokens": [45.0]})
    >>> "&lt;b&gt;sql&lt;/b&gt;" in tokens_table(tokens)
    True
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from tracekit.dashboards.tables import table

__all__ = ["own_time_table", "sessions_line", "tokens_table"]


def own_time_table(latency: pd.DataFrame) -> str:
    """Each agent's total and own time, p50 and p95, slowest own p95 first."""
    return table(
        latency,
        [("agent", "agent", "text"), ("calls", "calls", "num"), ("p50_ms", "p50", "ms"),
         ("p95_ms", "p95", "ms"), ("own_p50_ms", "own p50", "ms"),
         ("own_p95_ms", "own p95", "ms")],
        "No call ran in this window.",
        name="agents",
    )  # fmt: skip


def tokens_table(tokens: pd.DataFrame) -> str:
    """Each agent's own tokens: totals and the median per call, most input first."""
    return table(
        tokens,
        [("agent", "agent", "text"), ("calls", "calls with usage", "num"),
         ("input_tokens", "input tokens", "num"), ("output_tokens", "output tokens", "num"),
         ("median_input_tokens", "median input", "num"),
         ("median_output_tokens", "median output", "num")],
        "No model usage reported in this window.",
        name="agents",
    )  # fmt: skip


def sessions_line(sessions: dict[str, Any]) -> str:
    """The runs card's line on the window's sessions and how many had a failed run.

    Example:
        >>> sessions_line({"sessions": 9, "failed": 3, "runs": 20})
        '<div class="s">9 sessions, 3 with a failed run</div>'
    """
    count, failed = int(sessions.get("sessions", 0)), int(sessions.get("failed", 0))
    return (
        f'<div class="s">{count:,} session{"s" * (count != 1)}, {failed:,} with a failed run</div>'
    )
