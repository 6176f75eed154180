"""Shared checks for the SDK tests: read a JSONL trace and check its shape."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tracekit.events import Enter, Event, Exit, decode_event


def read_jsonl(path: Path) -> list[Event]:
    """Decode every line; a line that does not parse fails the test."""
    return [decode_event(line) for line in path.read_bytes().splitlines()]


def paired(events: list[Event]) -> dict[str, tuple[Enter, Exit | None]]:
    """Invocation id -> (enter, exit or None); an exit without enter fails."""
    enters = {e.invocationId: e for e in events if isinstance(e, Enter)}
    exits = {e.invocationId: e for e in events if isinstance(e, Exit)}
    assert set(exits) <= set(enters), "exit without enter"
    counts = Counter(e.invocationId for e in events if isinstance(e, Enter))
    assert max(counts.values(), default=1) == 1, "an invocation entered twice"
    return {i: (enter, exits.get(i)) for i, enter in enters.items()}


def agent_of_run(events: list[Event]) -> dict[str, str]:
    """Run id -> the agent running it (root runs included)."""
    runs = {e.runId: e.agent for e in events if isinstance(e, Enter)}
    runs.update({e.runId: e.agent for e in events if type(e).__name__ == "RunStart"})  # type: ignore[union-attr]
    return runs
