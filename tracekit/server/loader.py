"""The loader: spooled batches into the store's ``spans`` table, then their traces derived.

Each cycle stores the spans of the entries queued, whole, as received
(:meth:`load_spans`: one transaction), and moves the spool's checkpoint past
them: from then on the store holds them, so nothing is held back in the
spool. A trace that gained spans is derived from all its stored spans once
no span of it has come for ``settle`` seconds (:meth:`Store.derive_traces`:
its earlier rows replaced), so a trace whose root has not come is visible
as soon as it settles, as the run it is, and derived again whole when the
root arrives, after a restart too. At a graceful stop every trace not yet
derived is derived as it is; a start derives what a crash left underived.
v1 lines go through :meth:`Store.ingest_records` as they are.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from tracekit.server.spool import Checkpoint, Entry, Spool, decode_payload

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tracekit.store import Store

__all__ = ["Loader", "SourceStats"]

log = logging.getLogger("tracekit.server")

OTLP_SOURCE: Final = "serve:otlp"
DERIVE_SOURCE: Final = "serve:derive"
#: Traces derived in one cycle at most while serving (a stop derives them all).
_DERIVE_MOST: Final = 20_000


@dataclass
class SourceStats:
    """What one source has received since the server started (spans or lines)."""

    received: int = 0
    refused: int = 0  # at the request: counted as rejected once loaded


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
        max_pending: spans waiting to be derived at most; past it the oldest
            traces are derived at once.
        most: spans (or lines) one load takes from the queue at most, so
            that a loader behind its input holds a bounded share of it.
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
        max_pending: int = 100_000,
        most: int = 40_000,
    ) -> None:
        self.store = store
        self.spool = spool
        self.settle = settle
        self.linger = linger
        self.interval = interval
        self.batch = batch
        self.delay = delay
        self.most = most
        self.max_pending = max_pending
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
        self.spool.loaded = checkpoint.position
        self._fed = checkpoint.position
        self._next_line: dict[str, int] = {}
        self.replayed_to = checkpoint.position  # the end of the last entry replay() queued
        # Traces with spans stored but not derived: when each last gained one, and how many.
        self._dirty: dict[str, float] = {}
        self._dirty_spans: dict[str, int] = {}
        self._recovered = False  # the traces a crash left underived are found once
        self.loading = 0  # spans and lines taken from the queue but not yet committed
        self.loads = 0
        self.spans_loaded = 0  # stored in ``spans`` (or found there already)
        self.spans_stored = 0  # new in ``spans``
        self.duplicates = 0  # spans the store held already
        self.rejected = 0  # spans refused (at the request, or by the rules)
        self.skipped = 0
        self.cpu = {"load": 0.0, "derive": 0.0}  # this thread's CPU seconds
        self._hold = threading.Lock()  # held by a load, or by paused()
        self._thread = threading.Thread(target=self._run, name="tracekit-loader", daemon=True)

    @property
    def pending_spans(self) -> int:
        """Spans stored whose trace is not derived yet (it has not settled)."""
        return sum(self._dirty_spans.values())

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
        return count

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

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self._step(final=False)
        self._step(final=True)
        while (self._queue or self._dirty) and self.failed is None:  # a load takes a bounded share
            self._step(final=True)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No load runs inside this block (a snapshot copies the store meanwhile)."""
        with self._hold:
            yield

    def _step(self, *, final: bool) -> None:
        if self.failed is not None:
            return
        try:
            with self._hold:
                self.load_once(final=final)
        except Exception as exc:  # the store refused: stop loading, keep the spool
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("loading into the store failed, the spool is kept: %s", self.failed)

    def load_once(self, *, final: bool = False) -> int:
        """Store what is queued, then derive the traces that settled; return spans stored.

        Unless ``final``, nothing is stored until ``batch`` items are queued
        or ``delay`` seconds have passed since the last load; with ``final``
        every trace not derived yet is derived, settled or not.
        """
        now = time.monotonic()
        if not self._recovered:
            self._recovered = True
            for trace in self.store.underived_traces():
                self._dirty.setdefault(trace, now)
                self._dirty_spans.setdefault(trace, 0)
        stored = 0
        waiting = self._queued_items >= self.batch or now - self._last_load >= self.delay
        if self._queue and (final or waiting):
            self._last_load = now
            cycle = self._drain()
            self.loading = cycle.items
            stored = self.load_spans(cycle)
            self.loading = 0
        self._derive(time.monotonic(), final=final)
        return stored

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
        rows, lines, refused = _spans_of(cycle.entries)
        stored = 0
        if rows or refused:
            from tracekit.intake.otlp.received import rows_table

            taken = self.store.load_spans(
                rows_table(rows, lines), source=OTLP_SOURCE, refused=refused
            )
            stored += taken.stored
            self.spans_stored += taken.stored
            self.duplicates += taken.duplicates
            self.spans_loaded += len(rows)
            self.rejected += len(refused)
            arrived = time.monotonic()
            for row in rows:
                trace = row[2]
                self._dirty[trace] = arrived
                self._dirty_spans[trace] = self._dirty_spans.get(trace, 0) + 1
        stored += self._ingest_lines(cycle.lines)
        self._advance(cycle)
        self.cpu["load"] += time.thread_time() - clock
        return stored

    def _derive(self, now: float, *, final: bool) -> None:
        """Derive the traces that settled (all of them at a stop; the oldest past ``max_pending``)."""
        if not self._dirty:
            return
        clock = time.thread_time()
        if final:
            due = list(self._dirty)
        else:
            due = [t for t, last in self._dirty.items() if now - last >= self.settle]
            if self.pending_spans > self.max_pending:
                due = sorted(self._dirty, key=self._dirty.__getitem__)
            due = due[:_DERIVE_MOST]
        if due:
            report = self.store.derive_traces(due, source=DERIVE_SOURCE)
            if report.spans is not None:
                self.skipped += report.spans.outside
                self.rejected += report.spans.refused
            for trace in due:
                self._dirty.pop(trace, None)
                self._dirty_spans.pop(trace, None)
        self.cpu["derive"] += time.thread_time() - clock

    def _ingest_lines(self, lines: dict[str, list[bytes]]) -> int:
        stored = 0
        for source in sorted(lines):
            records = lines[source]
            first = self._first_line(source)
            report = self.store.ingest_records(records, source=source, first_line=first)
            self._next_line[source] = first + len(records)
            stored += report.totals.accepted
            self.loads += 1
        return stored

    def _first_line(self, source: str) -> int:
        found = self._next_line.get(source)
        if found is None:
            row = self.store.con.execute(
                "SELECT coalesce(max(end_line), 1) FROM ingest_log WHERE source = ?", [source]
            ).fetchone()
            found = int(row[0]) if row else 1
        return found

    def _advance(self, cycle: _Cycle) -> None:
        """Move the checkpoint past the cycle: the store holds all of it."""
        self.loads += 1
        if cycle.end != self._checkpoint:
            self.spool.write_checkpoint(Checkpoint(cycle.end, {}))
            self._checkpoint = cycle.end
            self.spool.trim(cycle.end)
        self.spool.loaded = cycle.end


def _spans_of(
    entries: list[tuple[int, bytes, float]],
) -> tuple[list[tuple[Any, ...]], list[int], list[tuple[int, str, str]]]:
    """The spans of spooled entries as row tuples, each entry's offset, and the spans refused."""
    from tracekit.intake.otlp.received import SPAN_NAMES
    from tracekit.server.decode import legacy_row

    width = len(SPAN_NAMES)
    rows: list[tuple[Any, ...]] = []
    lines: list[int] = []
    refused: list[tuple[int, str, str]] = []
    for start, payload, _ in entries:
        entry = decode_payload(payload)
        refused.extend((start, text, reason) for text, reason in entry.rejects)
        for row in entry.spans:  # an older server spooled decoded spans: fewer fields
            rows.append(tuple(row) if len(row) == width else legacy_row(row))
            lines.append(start)
    return rows, lines, refused
