"""The loader: spooled batches into the store, in batches, with the existing set-based ingest.

It keeps only spool offsets, loading and checkpoints: when a trace is
complete is intake's :class:`~tracekit.intake.assemble.TraceAssembler`
(settle, linger, limit, in seconds here), and the mapping is
:class:`~tracekit.intake.otlp.convert.OtlpConverter`'s. Records are ingested
with :meth:`Store.ingest_records` (duplicates by event key, derive, classify).
After each ingest the checkpoint moves to the first spool entry that still
has a span held, so a crash replays only what the store may not hold; at a
graceful stop a trace without its root is not mapped but kept (the
checkpoint stays before it), so its spans join their run when the rest of
the trace comes after the next start.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from tracekit.events import encode_event
from tracekit.intake.assemble import TraceAssembler
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.server.decode import span_of
from tracekit.server.spool import Checkpoint, Entry, Spool
from tracekit.store import Store

__all__ = ["Loader", "SourceStats"]

log = logging.getLogger("tracekit.server")

OTLP_SOURCE: Final = "serve:otlp"
#: Traces remembered after they are stored, so that a late span joins its run.
_REMEMBER: Final = 4096


@dataclass
class SourceStats:
    """What one source has received since the server started (spans or lines)."""

    received: int = 0
    refused: int = 0  # at the request: counted as rejected once loaded


@dataclass
class _Cycle:
    lines: dict[str, list[bytes]] = field(default_factory=dict)
    refused: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    end: int = 0


class Loader:
    """One thread that feeds spooled entries to the store.

    Args:
        store: the store, open for writing (this thread's connection).
        spool: where entries come from; its ``loaded`` offset is kept here.
        settle: seconds a rooted trace stays open for late spans.
        linger: seconds a trace without a root waits before it is mapped anyway.
        interval: how often to look for work.
        batch: spans (or lines) queued that start a load at once; fewer wait
            up to ``delay`` seconds, since a load has a fixed cost (derive,
            classify, commit) that a bigger batch shares.
        delay: seconds at most between loads while anything waits.
        max_pending: spans held at most; past it the oldest traces are mapped.
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
        max_pending: int = 500_000,
    ) -> None:
        self.store = store
        self.spool = spool
        self.settle = settle
        self.linger = linger
        self.interval = interval
        self.batch = batch
        self.delay = delay
        self._queued_items = 0  # spans and lines queued (two threads: under _count_lock)
        self._count_lock = threading.Lock()
        self._last_load = time.monotonic()
        self.max_pending = max_pending
        assembler = TraceAssembler(
            settle=settle, linger=linger, max_pending=max_pending, remember=_REMEMBER
        )
        self.converter = OtlpConverter(assembler)
        self.assembler = assembler
        self.failed: str | None = None  # why loading stopped (the store refused a write)
        self._queue: deque[tuple[int, int, Entry, float]] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending_spans = 0
        self._fed = 0  # end offset of the last entry fed
        checkpoint = spool.read_checkpoint()
        self._taken = dict(checkpoint.taken)
        self._replay_taken = dict(checkpoint.taken)
        self._checkpoint = checkpoint.position
        self.spool.loaded = checkpoint.position
        self._fed = checkpoint.position
        self._next_line: dict[str, int] = {}
        self.replayed_to = checkpoint.position  # the end of the last entry replay() queued
        self.loading = 0  # spans and lines taken from the queue but not yet committed
        self.loads = 0
        self.spans_fed = 0
        self.spans_loaded = 0  # fed, mapped and committed to the store (or skipped by the mapping)
        self._hold = threading.Lock()  # held by a load, or by paused()
        self._thread = threading.Thread(target=self._run, name="tracekit-loader", daemon=True)

    # -- input -----------------------------------------------------------------
    def deliver(self, start: int, end: int, entry: Entry) -> None:
        """Queue a durable entry (called by the spool's writer thread)."""
        self._queue.append((start, end, entry, time.monotonic()))
        with self._count_lock:
            self._queued_items += len(entry.spans) + len(entry.lines)
            full = self._queued_items >= self.batch
        if full:
            self._wake.set()

    def replay(self) -> int:
        """Queue what the spool holds past the checkpoint; return how many entries."""
        count = 0
        now = time.monotonic()
        for start, end, entry in self.spool.replay(self._checkpoint):
            self._queue.append((start, end, entry, now))
            with self._count_lock:
                self._queued_items += len(entry.spans) + len(entry.lines)
            count += 1
            self.replayed_to = end
        return count

    @property
    def pending_spans(self) -> int:
        """Spans held, waiting for the rest of their trace."""
        return self._pending_spans

    @property
    def queued(self) -> int:
        """Spooled entries not yet taken by this thread."""
        return len(self._queue)

    # -- the thread ------------------------------------------------------------
    def start(self) -> None:
        """Start loading in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Load everything queued and every trace that has its root, then stop.

        A trace without its root stays in the spool (the checkpoint is before
        it) for the next start: its spans are not mapped alone.
        """
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
        while self._queue and self.failed is None:  # a load takes a bounded share of the queue
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
        """Feed what is queued, map the traces that are complete, ingest; return records stored.

        Unless ``final``, nothing happens until ``batch`` items are queued or
        ``delay`` seconds have passed since the last load.
        """
        now = time.monotonic()
        if not final and self._queued_items < self.batch and now - self._last_load < self.delay:
            return 0
        self._last_load = now
        self.loading = self._queued_items + self._pending_spans
        try:
            return self._load(now, final)
        finally:
            self.loading = 0

    def _load(self, now: float, final: bool) -> int:
        cycle = self._drain()
        done = self.assembler.ready(now=now, final=final, incomplete=False)
        for trace in done:
            self._taken[trace] = self.assembler.last_position(trace)
        pairs = self.converter.take(done) if done else []
        self._pending_spans = self.converter.pending
        records = [encode_event(event) for _, event in pairs]
        mapped_refused = [(text, reason) for _, text, reason in self.converter.take_rejects()]
        if records or mapped_refused:
            cycle.lines.setdefault(OTLP_SOURCE, []).extend(records)
            cycle.refused.setdefault(OTLP_SOURCE, []).extend(mapped_refused)
        stored = self._ingest(cycle)
        self.spans_loaded = self.spans_fed - self._pending_spans
        self._advance(cycle.end)
        return stored

    def _drain(self) -> _Cycle:
        cycle = _Cycle(end=self._fed)
        taken = 0
        # At most a few batches a load: memory stays bounded when the loader is
        # behind, and past ~30,000 records a bigger load saves nothing.
        while self._queue and taken < 4 * self.batch:
            start, end, entry, arrived = self._queue.popleft()
            taken += len(entry.spans) + len(entry.lines)
            with self._count_lock:
                self._queued_items -= len(entry.spans) + len(entry.lines)
            self._feed(start, entry, arrived, cycle)
            cycle.end = end
        return cycle

    def _feed(self, start: int, entry: Entry, now: float, cycle: _Cycle) -> None:
        if entry.lines:
            cycle.lines.setdefault(entry.source, []).extend(entry.lines)
        if entry.rejects:
            cycle.refused.setdefault(OTLP_SOURCE, []).extend(entry.rejects)
        if not entry.spans:
            return
        spans = [span_of(row) for row in entry.spans]
        if self._replay_taken:  # a replay: spans mapped before the crash are not mapped again
            spans = [s for s in spans if self._replay_taken.get(s.trace, -1) < start]
        self.converter.feed_spans(spans, line=start, now=now)
        self.spans_fed += len(spans)

    def _ingest(self, cycle: _Cycle) -> int:
        stored = 0
        for source in sorted(set(cycle.lines) | set(cycle.refused)):
            lines = cycle.lines.get(source, [])
            refused_pairs = cycle.refused.get(source, [])
            first = self._first_line(source)
            refused = [
                (first + len(lines) + i, text, reason)
                for i, (text, reason) in enumerate(refused_pairs)
            ]
            report = self.store.ingest_records(
                lines, source=source, first_line=first, refused=refused
            )
            self._next_line[source] = first + len(lines) + len(refused)
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

    def _advance(self, end: int) -> None:
        """Move the checkpoint to the first entry that still has a span held."""
        self._fed = end
        if self._replay_taken and not self._queue:
            self._replay_taken = {}
        position = self.assembler.first_held(default=end)
        self._taken = {t: last for t, last in self._taken.items() if last >= position}
        if position != self._checkpoint or end != self.spool.loaded:
            self.spool.write_checkpoint(Checkpoint(position, dict(self._taken)))
            self._checkpoint = position
            self.spool.trim(position)
        self.spool.loaded = end
