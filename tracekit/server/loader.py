"""The loader: spooled batches into the store, in batches, with the existing set-based ingest.

It keeps only spool offsets, loading and checkpoints: the mapping (when a
trace is complete, and its records) runs in a process of its own
(:mod:`tracekit.server.mapper`), one cycle ahead: while that process maps
what came in since the last load, this thread loads what it mapped before
(:meth:`Store.ingest_records`: duplicates by event key, derive, classify).
A load takes whatever is complete when it starts, so loads grow with the
input, not with a count. After each load the checkpoint moves to the first
spool entry that still has a span held, so a crash replays only what the
store may not hold; at a graceful stop a trace without its root is not
mapped but kept (the checkpoint stays before it), so its spans join their
run when the rest of the trace comes after the next start.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from tracekit.server.mapper import Mapped, MapperProcess, MappingSettings, MapRequest
from tracekit.server.spool import Checkpoint, Entry, Spool, decode_payload

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tracekit.store import Store

__all__ = ["Loader", "SourceStats"]

log = logging.getLogger("tracekit.server")

OTLP_SOURCE: Final = "serve:otlp"
#: Traces remembered after they are stored, so that a late span joins its run.
_REMEMBER: Final = 1024


@dataclass
class SourceStats:
    """What one source has received since the server started (spans or lines)."""

    received: int = 0
    refused: int = 0  # at the request: counted as rejected once loaded
    batches: int = 0  # requests (or gRPC calls) whose spans reached the spool


@dataclass
class _Cycle:
    """What one load takes from the queue: v1 lines here, span entries for the mapper."""

    lines: dict[str, list[bytes]] = field(default_factory=dict)
    entries: list[tuple[int, bytes, float]] = field(default_factory=list)
    end: int = 0
    items: int = 0
    mapped: Mapped | None = None


class Loader:
    """One thread that feeds spooled entries to the store, through the mapping process.

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
        self.interval = interval
        self.batch = batch
        self.delay = delay
        self.most = most
        self._queued_items = 0  # spans and lines queued (two threads: under _count_lock)
        self._count_lock = threading.Lock()
        self._last_load = time.monotonic()
        self.failed: str | None = None  # why loading stopped (the store refused a write)
        # Spans entries wait as their spool payloads (compact); v1 lines as entries.
        self._queue: deque[tuple[int, int, Entry | bytes, int, float]] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        checkpoint = spool.read_checkpoint()
        self._taken = dict(checkpoint.taken)
        self._replaying = bool(checkpoint.taken)
        self._checkpoint = checkpoint.position
        self.spool.loaded = checkpoint.position
        self._fed = checkpoint.position  # end offset of the last entry handed to the mapping
        self._next_line: dict[str, int] = {}
        self.replayed_to = checkpoint.position  # the end of the last entry replay() queued
        self.loading = 0  # spans and lines taken from the queue but not yet committed
        self.loads = 0
        self.spans_loaded = 0  # fed, mapped and committed to the store (or skipped by the mapping)
        self.pending_spans = 0  # spans held by the mapping, waiting for the rest of their trace
        self.skipped = 0
        self.cpu = {"load": 0.0}  # this thread's CPU seconds (DuckDB's own threads not counted)
        self._held: _Cycle | None = None  # mapped, not yet loaded
        self._hold = threading.Lock()  # held by a load, or by paused()
        self.mapper = MapperProcess(
            MappingSettings(
                settle=settle,
                linger=linger,
                max_pending=max_pending,
                remember=_REMEMBER,
                replay_taken=dict(checkpoint.taken),
            )
        )
        self._thread = threading.Thread(target=self._run, name="tracekit-loader", daemon=True)

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
        """Load everything queued and every trace that has its root, then stop.

        A trace without its root stays in the spool (the checkpoint is before
        it) for the next start: its spans are not mapped alone.
        """
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self.mapper.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self._step(final=False)
        self._step(final=True)
        while (self._queue or self._held) and self.failed is None:  # a load takes a bounded share
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
                self.mapper.check()  # a mapping process gone fails at once: recovery replaces it
                self.load_once(final=final)
        except Exception as exc:  # the store refused: stop loading, keep the spool
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("loading into the store failed, the spool is kept: %s", self.failed)

    def load_once(self, *, final: bool = False) -> int:
        """Hand what is queued to the mapping, load what it mapped last time; return records stored.

        Unless ``final``, nothing happens until ``batch`` items are queued or
        ``delay`` seconds have passed since the last load. With ``final``
        the cycle mapped now is loaded too.
        """
        now = time.monotonic()
        if not final and self._queued_items < self.batch and now - self._last_load < self.delay:
            return 0
        self._last_load = now
        cycle = self._drain()
        self.loading = cycle.items + (self._held.items if self._held else 0)
        self.mapper.send(
            MapRequest(
                now=now,
                final=final,
                end=cycle.end,
                entries=cycle.entries,
                forget_replay=self._replaying and not self._queue,
            )
        )
        stored = self._store(self._held) if self._held else 0  # while the mapping maps `cycle`
        self._held = None
        cycle.mapped = self.mapper.receive()
        if final or (not cycle.mapped.records and not cycle.lines and not cycle.mapped.refused):
            stored += self._store(cycle)  # nothing to wait for: checkpoint now
        else:
            self._held = cycle
        self.loading = self._held.items if self._held else 0
        return stored

    def _drain(self) -> _Cycle:
        cycle = _Cycle(end=self._fed)
        # At most a few batches a load: memory stays bounded when the loader is
        # behind, and past ~30,000 records a bigger load saves nothing.
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

    def _store(self, cycle: _Cycle) -> int:
        """Load a mapped cycle, then move the checkpoint past what the store now holds."""
        mapped = cycle.mapped
        assert mapped is not None
        clock = time.thread_time()
        lines = dict(cycle.lines)
        refused = {OTLP_SOURCE: mapped.refused} if mapped.refused else {}
        if mapped.records:
            lines.setdefault(OTLP_SOURCE, []).extend(mapped.records)
        stored = self._ingest(lines, refused)
        self.pending_spans = mapped.pending
        self.skipped = mapped.skipped
        self.spans_loaded = mapped.spans_fed - mapped.pending
        self._advance(cycle, mapped)
        self.cpu["load"] += time.thread_time() - clock
        return stored

    def _ingest(
        self, lines: dict[str, list[bytes]], refused: dict[str, list[tuple[str, str]]]
    ) -> int:
        stored = 0
        for source in sorted(set(lines) | set(refused)):
            records = lines.get(source, [])
            refused_pairs = refused.get(source, [])
            first = self._first_line(source)
            numbered = [
                (first + len(records) + i, text, reason)
                for i, (text, reason) in enumerate(refused_pairs)
            ]
            report = self.store.ingest_records(
                records, source=source, first_line=first, refused=numbered
            )
            self._next_line[source] = first + len(records) + len(numbered)
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

    def _advance(self, cycle: _Cycle, mapped: Mapped) -> None:
        """Move the checkpoint to the first entry that still has a span held."""
        self._taken.update(mapped.taken)
        if self._replaying and not self._queue:
            self._replaying = False
        position = mapped.first_held
        self._taken = {t: last for t, last in self._taken.items() if last >= position}
        if position != self._checkpoint or cycle.end != self.spool.loaded:
            self.spool.write_checkpoint(Checkpoint(position, dict(self._taken)))
            self._checkpoint = position
            self.spool.trim(position)
        self.spool.loaded = cycle.end
