"""The traces stored and not derived yet, the oldest first, and a step that derives some.

A trace waits from the load that gave it a span until a step of derivation
takes it. A trace that gains a span goes to the end (its last span is the
newest), so the traces that settled are always the first ones. A step takes
traces up to a number of spans: while entries wait to be stored, as many as
the last steps derived in ``seconds`` (a load waits for one step at most),
else ``most``. A step (:func:`derive_step`) derives its traces in one
transaction; one the store refuses is bisected down to the traces at fault,
each kept in ``rejects`` with the reason.

Example:
    >>> waiting = Waiting(settle=1.0, most=20_000, seconds=2.0)
    >>> waiting.mark("a", 10.0, 3)
    >>> waiting.mark("b", 10.5, 2)
    >>> waiting.mark("a", 11.0, 1)
    >>> waiting.due(11.6, 100), waiting.spans
    (['b'], 6)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from tracekit.intake.otlp.dialect import Dialect
    from tracekit.store import Store
    from tracekit.store.rederive import RederiveReport

__all__ = ["DERIVE_SOURCE", "Stepped", "Waiting", "derive_step"]

log = logging.getLogger("tracekit.server")

DERIVE_SOURCE: Final = "serve:derive"

#: Traces derived in one step at most (one transaction).
STEP_TRACES: Final = 2_000
#: Spans one step takes at least while entries wait (a step has a fixed cost).
STEP_LEAST: Final = 5_000


class Waiting:
    """The traces waiting to be derived: when each last gained a span, and how many it gained.

    Args:
        settle: seconds without a new span before a trace is due.
        most: spans one step takes at most (a trace bigger than that goes alone).
        seconds: seconds a step should take while entries wait to be stored.
        max_pending: spans waiting past which the oldest traces are due, settled or not.
    """

    def __init__(
        self, *, settle: float, most: int, seconds: float, max_pending: int = 1 << 62
    ) -> None:
        self.settle = settle
        self.most = most
        self.seconds = seconds
        self.max_pending = max_pending
        self._last: dict[str, float] = {}  # the oldest first
        self._spans: dict[str, int] = {}
        self.spans = 0  # the sum of _spans
        self._pace = most / seconds  # spans a second the last steps derived
        # Seconds the oldest trace of the last step waited, from its last span to derived.
        self.lag = 0.0
        self.lag_max = 0.0

    def __len__(self) -> int:
        return len(self._last)

    def mark(self, trace: str, arrived: float, spans: int) -> None:
        """The trace gained ``spans`` at ``arrived``: it waits after the others."""
        self._last.pop(trace, None)
        self._last[trace] = arrived
        self._spans[trace] = self._spans.get(trace, 0) + spans
        self.spans += spans

    @property
    def over(self) -> bool:
        """More spans wait than ``max_pending``."""
        return self.spans > self.max_pending

    def since(self) -> float:
        """Seconds since the oldest trace waiting last gained a span (0: none waits)."""
        try:  # the loader thread changes the dict meanwhile
            last = next(iter(self._last.values()), None)
        except RuntimeError:
            return self.lag
        return 0.0 if last is None else max(time.monotonic() - last, 0.0)

    def step_spans(self, *, hurry: bool) -> int:
        """Spans the next step takes: fewer when ``hurry`` (entries wait to be stored)."""
        if not hurry:
            return self.most
        return int(min(max(self._pace * self.seconds, STEP_LEAST), self.most))

    def due(self, now: float, most: int, *, every: bool = False) -> list[str]:
        """The traces to derive next, the oldest first: settled ones, up to ``most`` spans.

        With ``every`` (a stop), or past ``max_pending``, the oldest go whether settled or not.
        """
        due: list[str] = []
        spans = 0
        force = every or self.over
        for trace, last in self._last.items():
            if (not force and now - last < self.settle) or len(due) >= STEP_TRACES:
                break
            size = max(self._spans.get(trace, 0), 1)
            if due and spans + size > most:
                break
            due.append(trace)
            spans += size
        return due

    def saw(self, lag: float) -> None:
        """Traces derived elsewhere (in hand) waited ``lag`` seconds: kept as the last and the most."""
        self.lag = lag
        self.lag_max = max(self.lag_max, lag)

    def waited(self, trace: str, now: float) -> float:
        """Seconds since the trace last gained a span."""
        return now - self._last.get(trace, now)

    def size(self, traces: list[str]) -> int:
        """The spans these traces gained while waiting (at least one each)."""
        return sum(max(self._spans.get(t, 0), 1) for t in traces)

    def derived(self, traces: list[str], spans: int, took: float, waited: float) -> None:
        """A step derived these traces: they wait no more; its pace and the lag are kept."""
        for trace in traces:
            self._last.pop(trace, None)
            self.spans -= self._spans.pop(trace, 0)
        took = max(took, 1e-3)
        self._pace = 0.5 * self._pace + 0.5 * spans / took
        self.lag = took + max(waited, 0.0)
        self.lag_max = max(self.lag_max, self.lag)


@dataclass
class Stepped:
    """What a step of derivation did beyond its derived rows."""

    #: Spans the rules refuse now, less what they refused when the traces were
    #: derived before (a trace derived again is not counted twice).
    refused: int = 0
    outside: int = 0  # spans under no agent run
    set_aside: int = 0  # traces the store could not derive (kept in rejects)


def derive_step(
    store: Store,
    traces: list[str],
    *,
    dialects: Sequence[Dialect],
    healthy: Callable[[], bool],
) -> Stepped:
    """Derive these traces from their stored spans; bisect a refusal down to the traces at fault.

    ``healthy`` says whether the store answers at all (a failure blames the data only then).
    """
    from tracekit.server.quarantine import run_quarantined
    from tracekit.store.spans import trace_refusals

    def part(some: Sequence[str]) -> RederiveReport:
        return store.derive_traces(list(some), source=DERIVE_SOURCE, dialects=dialects)

    before = trace_refusals(store.con, traces)
    reports, bad = run_quarantined(traces, part, healthy=healthy)
    done = Stepped(refused=trace_refusals(store.con, traces) - before)
    done.outside = sum(r.spans.outside for r in reports if r.spans is not None)
    if bad:
        _set_aside(store, bad)
        done.set_aside = len(bad)
    return done


def _set_aside(store: Store, bad: list[tuple[str, str]]) -> None:
    """Traces the derivation fails on: named in rejects with the reason, never retried."""
    from tracekit.intake.otlp.received import rows_table

    refused = [
        (0, f'{{"traceId": "{trace}"}}', f"the derivation failed on this trace: {why}")
        for trace, why in bad
    ]
    store.load_spans(rows_table([], []), source=DERIVE_SOURCE, refused=refused)
    log.error("%d traces could not be derived (kept in rejects): %s", len(bad), bad[0][1])
