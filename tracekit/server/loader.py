"""The loader: spooled batches into the store's ``spans`` table, then their traces derived.

Each cycle stores the spans of the entries queued, whole, as received
(:meth:`load_spans`: one transaction). A trace that gained spans is derived
from all its stored spans once no span of it has come for ``settle`` seconds
(:meth:`Store.derive_traces`: its earlier rows replaced), so a trace whose
root has not come is visible as soon as it settles, as the run it is, and
derived again whole when the root arrives, after a restart too. A span the
store holds already (a replayed spool entry, a batch sent twice) changes
nothing: its trace is not derived again for it.

A trace new to the store is derived from the spans the loader has just
stored, in hand (:mod:`tracekit.server.in_hand`), the rest from the store.
Storing comes first: the traces that settled are derived a step at a time
(:mod:`tracekit.server.waiting`) while no load is due, so a load waits for
one step at most; while storing keeps up (nothing queued after a load) a
step in hand also follows a load every 2 s, so derived rows lag a few
seconds (past 150,000 spans in hand while loads wait, the oldest go to the
store's road). Past ``max_pending`` spans waiting, a step follows each load:
loads slow down to what derivation keeps up with. A graceful stop
derives for ``stop_derive`` seconds at most; a start derives what a stop or
a crash left underived. v1 lines go through :meth:`Store.ingest_records`.

What the store refuses for its data is bisected down to what is at fault
(:mod:`tracekit.server.quarantine`, :mod:`tracekit._util.quarantine`): a
load of v1 lines down to the records, a load of spans down to the spool
entries, a derivation down to the traces; each is kept in ``rejects`` with
the store's reason and never retried, so one poison span or trace costs
only its own rejection. Once the store's file holds a load (a
``CHECKPOINT``, at most every ``durable_every`` seconds: DuckDB's log alone
is not trusted), the spool's checkpoint moves past it, so a crash replays
only what the store's file may not hold.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from tracekit.server.health import STALL_SECONDS, stalled_for
from tracekit.server.in_hand import Hand, HandError
from tracekit.server.quarantine import load_quarantined, run_quarantined
from tracekit.server.spool import Checkpoint, Entry, Spool, decode_payload
from tracekit.server.spooled import row_text, spooled_spans
from tracekit.server.waiting import DERIVE_SOURCE, Waiting, derive_step
from tracekit.store import next_line

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from tracekit.intake.otlp.dialect import Dialect
    from tracekit.store import Store

__all__ = ["Loader", "SourceStats"]

log = logging.getLogger("tracekit.server")

OTLP_SOURCE: Final = "serve:otlp"


@dataclass
class SourceStats:
    """What one source has received since the server started (spans or lines)."""

    received: int = 0
    refused: int = 0  # at the request: counted as rejected once loaded
    batches: int = 0  # requests (or gRPC calls) whose spans reached the spool


@dataclass
class _Cycle:
    """What one load takes from the queue: v1 lines, and span entries as spooled."""

    lines: dict[str, list[bytes]] = field(default_factory=dict)
    entries: list[tuple[int, bytes, float]] = field(default_factory=list)
    end: int = 0
    items: int = 0


class Loader:
    """One thread that stores spooled entries and derives the traces that settled.

    Args:
        store: the store, open for writing (this thread's connection).
        spool: where entries come from; its ``loaded`` offset is kept here.
        settle: seconds without a new span before a trace is derived.
        linger: kept for the configuration's sake: a trace without its root
            is derived as it is once it settles, and again when the root comes.
        interval: how often to look for work.
        batch: spans (or lines) queued that start a load at once; fewer wait
            up to ``delay`` seconds, since a load has a fixed cost (a commit).
        delay: seconds at most between loads while anything waits.
        max_pending: spans waiting to be derived past which each load is
            followed by a step of derivation (the oldest traces, settled or not).
        derive_spans: spans one step of derivation takes at most (a trace
            bigger than that is derived whole, alone).
        derive_seconds: seconds one step of derivation should take (its
            size follows the pace of the last steps).
        stop_derive: seconds a graceful stop derives for at most; what is
            left is derived by the next start.
        most: spans (or lines) one load takes from the queue at most, so
            that a loader behind its input holds a bounded share of it.
        durable_every: seconds at most between store checkpoints (after
            which the spool lets go of what the store's file holds).
        dialects: the user's dialects (``--dialect FILE``) the traces are derived with.
    """

    def __init__(
        self,
        store: Store,
        spool: Spool,
        *,
        settle: float = 1.0,
        linger: float = 300.0,
        interval: float = 0.1,
        batch: int = 20_000,
        delay: float = 1.0,
        max_pending: int = 1_000_000,
        derive_spans: int = 20_000,
        derive_seconds: float = 2.0,
        stop_derive: float = 60.0,
        most: int = 40_000,
        durable_every: float = 2.0,
        dialects: Sequence[Dialect] = (),
    ) -> None:
        self.store = store
        self.spool = spool
        self.settle = settle
        self.linger = linger
        self.interval = interval
        self.batch = batch
        self.delay = delay
        self.most = most
        self.stop_derive = stop_derive
        self.dialects = tuple(dialects)
        self._queued_items = 0  # spans and lines queued (two threads: under _count_lock)
        self._count_lock = threading.Lock()
        self._last_load = time.monotonic()
        self.failed: str | None = None  # why loading stopped (the store refused a write)
        # Spans entries wait as their spool payloads (compact); v1 lines as entries.
        self._queue: deque[tuple[int, int, Entry | bytes, int, float]] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        checkpoint = spool.read_checkpoint()
        self._checkpoint = checkpoint.position
        self._position = checkpoint.position  # where the checkpoint goes once durable
        self._taken_changed = False
        self.durable_every = durable_every
        self._last_durable = time.monotonic()
        self.progress_at = time.monotonic()  # the end of the last load step
        self.stall_after = STALL_SECONDS
        self.spool.loaded = checkpoint.position
        self._fed = checkpoint.position
        self._next_line: dict[str, int] = {}
        self.replayed_to = checkpoint.position  # the end of the last entry replay() queued
        self.replayed_items = 0  # spans and lines replay() queued
        # Traces with spans stored but not derived, the oldest first: those the
        # store derives from their stored spans; the others are derived in hand.
        self.waiting = Waiting(
            settle=settle, most=derive_spans, seconds=derive_seconds, max_pending=max_pending
        )
        self.hand = Hand(settle=settle, dialects=self.dialects)
        self._busy = False  # more work is due at once (no wait before the next step)
        self._recovered = False  # the traces a crash left underived are found once
        self.loading = 0  # spans and lines taken from the queue but not yet committed
        self.loads = 0
        self.spans_loaded = 0  # stored in ``spans`` (or found there already)
        self.spans_stored = 0  # new in ``spans``
        self.duplicates = 0  # spans the store held already
        self.rejected = 0  # spans refused (at the request, or by the rules)
        self.skipped = 0
        self.quarantined = 0  # records, spool entries and traces the store refused one by one
        self.rejected_later = 0  # refused after the request: by the rules or the store's load
        self.cpu = {"load": 0.0, "derive": 0.0}  # this thread's CPU seconds
        self._hold = threading.Lock()  # held by a load, or by paused()
        self._thread = threading.Thread(target=self._run, name="tracekit-loader", daemon=True)

    @property
    def pending_spans(self) -> int:
        """Spans stored whose trace is not derived yet (it has not settled)."""
        return self.waiting.spans + self.hand.pending

    def derive_lag(self) -> float:
        """Seconds since the least recent trace not derived yet gained a span (0: none)."""
        return max(self.waiting.since(), self.hand.lag(time.monotonic()))

    def _underived(self) -> bool:
        return bool(self.waiting) or self.hand.pending > 0

    # -- input -----------------------------------------------------------------
    def deliver(
        self, start: int, end: int, entry: Entry | None, payload: bytes, items: int
    ) -> None:
        """Queue a durable entry (called by the spool's writer thread)."""
        self._enqueue(start, end, entry, payload, items, time.monotonic())

    def _enqueue(
        self, start: int, end: int, entry: Entry | None, payload: bytes, items: int, now: float
    ) -> None:
        kept = entry if entry is not None and entry.lines else payload
        self._queue.append((start, end, kept, items, now))
        with self._count_lock:
            self._queued_items += items
            full = self._queued_items >= self.batch
        if full:
            self._wake.set()

    def replay(self) -> int:
        """Queue what the spool holds past the checkpoint; return how many entries."""
        count = 0
        now = time.monotonic()
        for start, end, payload in self.spool.replay_raw(self._checkpoint):
            entry = decode_payload(payload)
            items = len(entry.spans) + len(entry.lines)
            self._enqueue(start, end, entry, payload, items, now)
            count += 1
            self.replayed_to = end
            self.replayed_items += items
        return count

    @property
    def checkpoint_position(self) -> int:
        """The spool offset up to which the store's file holds everything."""
        return self._checkpoint

    def stalled(self) -> str | None:
        """Why loading or deriving is stuck (no progress with work waiting), or None."""
        found = stalled_for(
            waiting=len(self._queue) + self.loading + len(self.waiting) + self.hand.pending,
            since=self.progress_at,
            now=time.monotonic(),
            after=self.stall_after,
        )
        if found is None:
            return None
        return (
            f"loading has made {found} with {len(self._queue)} batches queued"
            f" and {len(self.waiting) + self.hand.traces} traces to derive"
        )

    def queue_items(self) -> list[tuple[int, int, Entry | bytes, int, float]]:
        """A copy of the queue: ``(start, end, entry or payload, items, arrived)``."""
        return list(self._queue)

    @property
    def queued(self) -> int:
        """Spooled entries not yet taken by this thread."""
        return len(self._queue)

    # -- the thread ------------------------------------------------------------
    def start(self) -> None:
        """Start loading in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Load everything queued, derive every trace not derived yet, then stop."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.failed is not None:
            # What was committed before the failure (not the disk's) goes into the
            # store's file now, so a reopen replays only the rest.
            with contextlib.suppress(Exception), self._hold:
                self._make_durable(force=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._busy:
                self._wake.wait(self.interval)
            self._wake.clear()
            self._step(final=False)
        until = time.monotonic() + self.stop_derive
        self._step(final=True, until=until)
        while (self._queue or self._underived()) and self.failed is None:  # a bounded share a load
            if not self._queue and time.monotonic() >= until:
                log.warning(
                    "%d spans of %d traces and more in hand are stored and not derived yet:"
                    " the next start derives them",
                    self.pending_spans,
                    len(self.waiting),
                )
                break
            self._step(final=True, until=until)
        if self.failed is None:
            try:
                with self._hold:
                    self._make_durable(force=True)
            except Exception as exc:  # the store or the spool refused: the spool keeps it all
                self.failed = f"{type(exc).__name__}: {exc}"
                log.error("the last checkpoint failed, the spool is kept: %s", self.failed)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No load runs inside this block (a snapshot copies the store meanwhile)."""
        with self._hold:
            yield

    def _step(self, *, final: bool, until: float | None = None) -> None:
        if self.failed is not None:
            return
        try:
            with self._hold:
                self.load_once(final=final, until=until)
                self._make_durable(force=False)  # also while idle, after the last load
            self.progress_at = time.monotonic()
        except Exception as exc:  # the store refused: stop loading, keep the spool
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("loading into the store failed, the spool is kept: %s", self.failed)

    def load_once(self, *, final: bool = False, until: float | None = None) -> int:
        """Store what is queued, or else derive a step of the traces that settled; return spans stored.

        Unless ``final``, nothing is stored until ``batch`` items are queued
        or ``delay`` seconds have passed since the last load, and a step of
        derivation runs only when no load is due (or, past ``max_pending``,
        after each load). With ``final`` everything queued is stored (a
        bounded share at a time) and every trace not derived yet is derived,
        settled or not (until ``until``, a monotonic time, if given).
        """
        now = time.monotonic()
        self._recover(now)
        stored = 0
        due = self._queued_items >= self.batch or now - self._last_load >= self.delay
        loaded = bool(self._queue) and (final or due)
        if loaded:
            self._last_load = now
            cycle = self._drain()
            self.loading = cycle.items
            stored = self.load_spans(cycle)
            self.loading = 0
        if final:
            while self._underived() and self.failed is None:
                if until is not None and time.monotonic() >= until:
                    break
                self._derive(time.monotonic(), final=True)
        elif not loaded or self.waiting.over:
            self._derive(time.monotonic(), final=False)
        elif not self._queue:
            # Storing keeps up (nothing left queued after the load): the traces in
            # hand are derived between loads, so derived rows lag a few seconds.
            self._derive(time.monotonic(), final=False, hand_only=True)
        elif self.hand.over:  # storing first, memory bounded: the store derives them later
            for trace, spans in self.hand.shed():
                self.waiting.mark(trace, now, spans)
        later = time.monotonic()
        self._busy = self._queued_items >= self.batch or bool(self.waiting.due(later, 1))
        self._busy = self._busy or self.hand.due(later)
        return stored

    def _recover(self, now: float) -> None:
        """Once, before the first load: the traces a stop or a crash left underived wait."""
        if not self._recovered:
            self._recovered = True
            for trace in self.store.underived_traces():
                self.waiting.mark(trace, now, 0)

    def _drain(self) -> _Cycle:
        cycle = _Cycle(end=self._fed)
        while self._queue and cycle.items < self.most:
            start, end, item, items, arrived = self._queue.popleft()
            cycle.items += items
            with self._count_lock:
                self._queued_items -= items
            if isinstance(item, Entry):
                cycle.lines.setdefault(item.source, []).extend(item.lines)
            else:
                cycle.entries.append((start, item, arrived))
            cycle.end = end
        self._fed = cycle.end
        return cycle

    def load_spans(self, cycle: _Cycle) -> int:
        """Store one cycle's spans as received (and its v1 lines); checkpoint past them.

        One transaction for the spans; each span's line is its spool entry's
        offset. Returns the spans (and records) newly stored.
        """
        clock = time.thread_time()
        self._recover(time.monotonic())
        rows, lines, refused, unreadable = spooled_spans(cycle.entries)
        self.rejected_later += unreadable
        stored = self._store_spans(rows, lines, refused) if rows or refused else 0
        stored += self._ingest_lines(cycle.lines)
        self._advance(cycle)
        self.cpu["load"] += time.thread_time() - clock
        return stored

    def _store_spans(
        self, rows: list[tuple[Any, ...]], lines: list[int], refused: list[tuple[int, str, str]]
    ) -> int:
        """Store received rows (and spans refused at the request); a refused load is bisected."""
        left = [refused]  # the refusals go with the first part the store takes

        def step(part: Sequence[tuple[tuple[Any, ...], int]]) -> int:
            stored = self._put(part, left[0])
            left[0] = []
            return stored

        pairs = list(zip(rows, lines, strict=True))
        done, bad = run_quarantined(pairs, step, healthy=self._store_answers)
        set_aside = [
            (line, row_text(row), f"the store could not load it: {why}") for (row, line), why in bad
        ]
        if set_aside or left[0]:  # never retried: kept in rejects
            self.quarantined += len(bad)
            self.rejected_later += len(bad)
            done.append(self._put([], [*left[0], *set_aside]))
        return sum(done)

    def _put(
        self, pairs: Sequence[tuple[tuple[Any, ...], int]], refused: list[tuple[int, str, str]]
    ) -> int:
        """One transaction: these rows stored, ``refused`` kept in rejects; the traces marked."""
        from tracekit.intake.otlp.received import rows_table

        taken = self.store.load_spans(
            rows_table([r for r, _ in pairs], [line for _, line in pairs]),
            source=OTLP_SOURCE,
            refused=refused,
        )
        self.loads += 1
        self.spans_stored += taken.stored
        self.duplicates += taken.duplicates
        self.spans_loaded += len(pairs)
        self.rejected += len(refused)
        arrived = time.monotonic()
        for trace in self.hand.route(self.store, pairs, taken, arrived):
            self.waiting.mark(trace, arrived, 1)
        return taken.stored

    def _derive(self, now: float, *, final: bool, hand_only: bool = False) -> None:
        """Derive a step of traces: the oldest that settled (at a stop, any), a step's worth.

        The traces in hand first: while loads wait, every 2 s at most (and
        after a load too: ``hand_only``); else those the store derives.
        """
        if (final and self.hand.pending) or self.hand.due(now, busy=hand_only or bool(self._queue)):
            clock = time.thread_time()
            stepped = self._hand_step(now, final=final)
            self.cpu["derive"] += time.thread_time() - clock
            if stepped:
                return
        if hand_only:
            return
        hurry = bool(self._queue) and not final
        due = self.waiting.due(now, self.waiting.step_spans(hurry=hurry), every=final)
        if not due:
            return
        clock = time.thread_time()
        spans, waited = self.waiting.size(due), self.waiting.waited(due[0], now)
        done = derive_step(self.store, due, dialects=self.dialects, healthy=self._store_answers)
        self.rejected += done.refused
        self.rejected_later += done.refused
        self.skipped += done.outside
        self.quarantined += done.set_aside
        self.waiting.derived(due, spans, time.monotonic() - now, waited)
        self.cpu["derive"] += time.thread_time() - clock

    def _hand_step(self, now: float, *, final: bool) -> bool:
        """A step of the traces in hand; whether it derived any.

        A step the store refuses leaves its traces to the store's road, which
        finds the traces at fault (the store answering).
        """
        most = 2 * self.most  # the spans of two loads: the traces in hand keep up with them
        lag = self.hand.lag(now)
        for trace in self.hand.feed():  # a span link, a row it cannot read: the store's
            self.waiting.mark(trace, now, 1)
        try:
            report, derived = self.hand.step(
                self.store,
                now,
                final=final,
                most=most,
                source=DERIVE_SOURCE,
                span_source=OTLP_SOURCE,
            )
        except HandError as exc:
            if not self._store_answers():
                raise exc.cause from None
            for trace in exc.traces:
                self.waiting.mark(trace, now, 1)
            return False
        if report is None:
            return False
        refused = len(derived.refused)
        self.rejected += refused
        self.rejected_later += refused
        self.skipped += report.spans.outside if report.spans is not None else 0
        self.waiting.saw(lag + time.monotonic() - now)
        return True

    def _ingest_lines(self, lines: dict[str, list[bytes]]) -> int:
        stored = 0
        for source in sorted(lines):
            load = functools.partial(self._load, source)
            done, aside = load_quarantined(lines[source], [], load, healthy=self._store_answers)
            stored += done
            self.quarantined += aside
            self.rejected_later += aside
        return stored

    def _load(
        self, source: str, records: Sequence[bytes], refused_pairs: Sequence[tuple[str, str]]
    ) -> int:
        """One load of records (and refused lines) of one source; records stored."""
        first = self._first_line(source)
        numbered = [
            (first + len(records) + i, text, reason)
            for i, (text, reason) in enumerate(refused_pairs)
        ]
        report = self.store.ingest_records(
            list(records), source=source, first_line=first, refused=numbered
        )
        self._next_line[source] = first + len(records) + len(numbered)
        self.rejected_later += report.totals.rejected - len(numbered)  # v1 lines it refused
        self.loads += 1
        return report.totals.accepted

    def _store_answers(self) -> bool:
        """Whether the store answers at all (a failed load blames its data only then)."""
        # A load whose COMMIT failed may leave its transaction open and aborted.
        with contextlib.suppress(Exception):
            self.store.con.execute("ROLLBACK")
        try:
            self.store.con.execute("SELECT 1").fetchall()
        except Exception:
            return False
        return True

    def _first_line(self, source: str) -> int:
        found = self._next_line.get(source)
        return next_line(self.store.con, source) if found is None else found

    def _advance(self, cycle: _Cycle) -> None:
        """The store holds the cycle: the checkpoint moves past it once the store's file does."""
        self._position = cycle.end
        self.spool.loaded = cycle.end
        self._make_durable(force=False)

    def _make_durable(self, *, force: bool) -> None:
        """Move the spool's checkpoint, once the store's file (not only its log) holds the rows.

        DuckDB's log (the ``.wal``) is not to be trusted alone: a torn or
        damaged log is read only as far as it is whole, silently. So the
        spool keeps everything until a ``CHECKPOINT`` has written the rows into
        the database file, at most every ``durable_every`` seconds.
        """
        position = self._position
        if position == self._checkpoint:
            return
        if not force and time.monotonic() - self._last_durable < self.durable_every:
            return
        self.store.con.execute("CHECKPOINT")
        self._last_durable = time.monotonic()
        self.spool.write_checkpoint(Checkpoint(position, {}))
        self._checkpoint = position
        self.spool.trim(position)
