"""The loader's traces derived from the spans it has just stored, as a file ingest derives them.

Each load hands the spans the store took to one long-lived
:class:`~tracekit.intake.otlp.derivation.SpanDeriver` (the mapping file
ingest and ``tracekit tree`` use), read straight from their rows
(:func:`~tracekit.intake.otlp.stored.row_span`). A trace is derived once no
span of it has come for ``settle`` seconds, rooted or not (a trace whose root
has not come is an ``incomplete`` run), and its rows and stamp stored in one
transaction (:meth:`Store.derive_in_hand`), without reading ``spans`` back.

What the deriver cannot derive exactly as the stored spans would be goes to
the store's own road (:func:`tracekit.server.waiting.derive_step`, from the
stored spans): a trace with spans stored before the deriver saw it (a late
span of a trace derived already, a root after a restart, a spool replayed),
a trace a span link joins to another, a row the typed decoder cannot read.
The deriver holds spans in memory only: a crash leaves their traces stored
and underived, and the next start derives them from the store.

Example:
    >>> hand = Hand(settle=1.0)
    >>> hand.pending, hand.lag(10.0)
    (0, 0.0)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from tracekit.intake.otlp.derivation import Derived, SpanDeriver
from tracekit.intake.otlp.dialects import using
from tracekit.intake.otlp.received import SPAN_NAMES
from tracekit.intake.otlp.stored import row_span

if TYPE_CHECKING:
    from tracekit.intake.otlp.decoded import Span
    from tracekit.intake.otlp.dialect import Dialect
    from tracekit.store import Store
    from tracekit.store.rederive import RederiveReport
    from tracekit.store.spans import SpanLoad

__all__ = ["HELD_MOST", "Hand", "HandError"]

log = logging.getLogger("tracekit.server")

#: Spans held in hand at most: past it the oldest traces go to the store's road (their
#: spans are stored). Held as spans they cost about 2 KB each: 50,000 keeps the
#: server under 1 GB in a 10-minute soak (150,000 peaked at 1,009 MB).
HELD_MOST: Final = 50_000
#: Seconds at least between two steps in hand (a step has a fixed cost of a
#: few tenths of a second: its statements, the classification, the commit).
EVERY: Final = 2.0
_TRACE: Final = SPAN_NAMES.index("trace_id")
_LINKED: Final = SPAN_NAMES.index("linked")


class HandError(Exception):
    """The store refused a step in hand: ``traces`` go to the store's road."""

    def __init__(self, cause: Exception, traces: list[str]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.traces = traces


class Hand:
    """The spans in hand of the traces the loader derives without the store's ``spans``.

    Args:
        settle: seconds without a new span before a trace is derived.
        dialects: the user's dialects the traces are derived with.
        most: spans held at most.
        every: seconds at least between two steps.
    """

    def __init__(
        self,
        *,
        settle: float,
        dialects: Sequence[Dialect] = (),
        most: int = HELD_MOST,
        every: float = EVERY,
    ) -> None:
        # Read back from rows, the spans meet the limits again here (a cut string
        # is kept whole in its row's JSON), as when the store derives them.
        self.deriver = SpanDeriver(settle=settle, linger=settle, max_pending=most, checked=False)
        self.dialects = tuple(dialects)
        self.most = most
        self.every = every
        self._last = float("-inf")
        self._linked: set[str] | None = None  # traces a stored span links to
        self._oldest: float | None = None  # when the least recent trace held gained a span
        self._storing = 0  # spans of the step being stored
        # Rows routed here and not read yet: (ingest, arrived, line, rows), their traces.
        self._rows: list[tuple[int, float, int, list[tuple[Any, ...]]]] = []
        self._later: dict[str, None] = {}
        self._waiting = 0  # their rows
        self._first = 0.0  # when the first of them arrived

    @property
    def pending(self) -> int:
        """Spans held, their trace not derived yet (a step's until it commits)."""
        return self.deriver.pending + self._waiting + self._storing

    @property
    def over(self) -> bool:
        """More spans are held than ``most``: some go to the store's road (:meth:`shed`)."""
        return self.deriver.pending + self._waiting > self.most

    @property
    def traces(self) -> int:
        """Traces held, not derived yet."""
        return len(self.deriver) + len(self._later)

    def lag(self, now: float) -> float:
        """Seconds since the least recent trace held gained a span (0: none held)."""
        oldest = self._oldest
        if self._rows:
            oldest = self._first if oldest is None else min(oldest, self._first)
        return 0.0 if oldest is None else max(now - oldest, 0.0)

    def route(
        self,
        store: Store,
        pairs: Sequence[tuple[tuple[Any, ...], int]],
        taken: SpanLoad,
        arrived: float,
    ) -> list[str]:
        """Take the spans a load stored; return the store's share, a trace for each of its spans.

        ``pairs`` are the load's rows with their spool offsets, ``taken`` what
        the store made of them.
        """
        if self._linked is None:
            self._linked = set(store.linked_traces())
        gained = None if taken.gained is None else set(taken.gained)
        prior = set(taken.prior)
        held = self.deriver
        stored: list[str] = []
        lines: dict[int, list[tuple[Any, ...]]] = {}
        for row, line in pairs:
            trace = row[_TRACE]
            if gained is not None and trace not in gained:
                continue  # every span of it was stored already: nothing changes
            if row[_LINKED]:
                self._linked.update(row[_LINKED])
            fed = trace in held or trace in self._later
            if fed or (trace not in prior and trace not in self._linked):
                lines.setdefault(line, []).append(row)
                self._later[trace] = None
            else:
                stored.append(trace)
        if lines and not self._rows:
            self._first = arrived
        self._rows.extend((taken.ingest_id, arrived, line, rows) for line, rows in lines.items())
        self._waiting += sum(len(rows) for rows in lines.values())
        return stored

    def feed(self) -> list[str]:
        """Read the rows routed here into spans, for the deriver; the traces it hands back.

        Routing is cheap and runs with each load; reading waits for the next
        step, so that a load does not wait for it. A trace the deriver cannot
        take (a span link, a row it cannot read) is the store's: returned,
        a trace for each of its spans.
        """
        held = self.deriver
        with using(self.dialects):
            for ingest, arrived, line, rows in self._rows:
                held.start(ingest)
                held.add(self._spans(rows), line, now=arrived)
        self._rows.clear()
        self._later.clear()
        self._waiting = 0
        self._oldest = held.oldest()
        return list(held.forget())

    def _spans(self, rows: list[tuple[Any, ...]]) -> list[Span]:
        spans: list[Span] = []
        for row in rows:
            try:
                spans.append(row_span(row))
            except Exception:  # the store's road refuses it, in its words
                self.deriver.void(row[_TRACE])
        return spans

    def shed(self) -> list[tuple[str, int]]:
        """Past ``most`` spans held, traces go to the store's road; each with its spans.

        Their spans are stored: the store derives them later, as any trace
        with spans stored before, and memory stays bounded while loads wait.
        The rows not read yet go first (nothing to undo), then the traces
        held the longest, down to half of ``most``.
        """
        out: dict[str, int] = {}
        for _, _, _, rows in self._rows:
            for row in rows:
                out[row[_TRACE]] = out.get(row[_TRACE], 0) + 1
        self._rows.clear()
        self._later.clear()
        self._waiting = 0
        held = self.deriver
        for trace in out:
            if trace in held:
                held.void(trace)
        for trace, spans in held.held():
            if held.pending <= self.most // 2:
                break
            out[trace] = out.get(trace, 0) + spans
            held.void(trace)
        held.forget()
        self._oldest = held.oldest()
        return list(out.items())

    def due(self, now: float, *, busy: bool = True) -> bool:
        """Whether a step may run: spans are held, and (``busy``: loads wait) ``every`` has passed."""
        return self.pending > 0 and (not busy or now - self._last >= self.every)

    def step(
        self, store: Store, now: float, *, final: bool, most: int, source: str, span_source: str
    ) -> tuple[RederiveReport | None, Derived]:
        """Derive the traces settled by ``now`` (``final``: every one held), up to ``most`` spans.

        The rows routed here are read first (:meth:`feed`). Returns what the
        store reported and what was derived.

        Raises:
            HandError: the store refused the step; its traces are then the
                store's to derive, from their stored spans.
        """
        if self._rows:
            raise RuntimeError("rows routed and not fed: feed() first")
        with using(self.dialects):
            derived = self.deriver.finish() if final else self.deriver.ready(now, most)
            if sum(derived.sizes.values()) < most:  # else more have settled: due again at once
                self._last = now
            self.deriver.forget()
            self._oldest = self.deriver.oldest()
            if not derived.traces:
                return None, derived
            self._storing = sum(derived.sizes.values())
            try:
                report = store.derive_in_hand(
                    derived, source=source, span_source=span_source, dialects=self.dialects
                )
            except Exception as exc:  # the caller asks whether the store answers at all
                raise HandError(exc, derived.traces) from exc
            finally:
                self._storing = 0
        return report, derived
