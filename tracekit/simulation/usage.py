"""Model usage of a simulated invocation and the sessions runs belong to.

Both are drawn without touching the fleet's own random stream, so a seed
gives the same runs, outcomes and times with usage drawn or without: an
invocation's tokens follow from its id (itself drawn from the seed), its
agent's model and scale from the agent's name, and sessions from a stream of
their own (``Random(f"{seed}:sessions")``).

Example:
    >>> usage_of("00000000000003e8", "sql", ended=True)
    Usage(inputTokens=660, outputTokens=330, models=['gpt-4.1-mini'])
    >>> usage_of("00000000000003e8", "sql", ended=False) is None
    True
"""

from __future__ import annotations

import random
import zlib
from typing import Final

from tracekit.events import Usage

__all__ = ["MODELS", "Sessions", "usage_of"]

MODELS: Final = ("gpt-4.1-mini", "claude-sonnet-4", "gemini-2.5-flash")


def usage_of(inv_id: str, agent: str, *, ended: bool) -> Usage | None:
    """The own usage of an invocation that ran (None for one that never ended or was refused).

    Each agent has its model and its scale (1x to 5x), so the fleet's
    per-agent token table has something to tell apart.
    """
    if not ended:
        return None
    salt = zlib.crc32(agent.encode())
    scale = 1 + salt % 5
    try:
        spread = int(inv_id[-8:], 16)
    except ValueError:  # not a span id: any stable number will do
        spread = zlib.crc32(inv_id.encode())
    input_tokens = scale * (120 + spread % 900)
    return Usage(
        inputTokens=input_tokens,
        outputTokens=input_tokens // (2 + spread % 4),
        models=[MODELS[salt % len(MODELS)]],
    )


class Sessions:
    """Hands each run a session id: a service's runs come in sessions of one to four."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"{seed}:sessions")
        self.open: dict[str, tuple[str, int]] = {}

    def next(self, service: str) -> str:
        """The session of the service's next run.

        Example:
            >>> sessions = Sessions(0)
            >>> first = sessions.next("a")
            >>> first.startswith("sess-") and len(first) == 17
            True
        """
        current = self.open.get(service)
        if current is None or current[1] <= 0:
            current = (f"sess-{self.rng.getrandbits(48):012x}", self.rng.randint(1, 4))
        self.open[service] = (current[0], current[1] - 1)
        return current[0]
