"""The collector: the store, the spool and the loader of one server, and what they count."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from tracekit.errors import StoreError
from tracekit.server.config import ServeConfig, ServeError, spool_dir
from tracekit.server.decode_pool import Decoded
from tracekit.server.loader import Loader, SourceStats
from tracekit.server.recovery import Recovery
from tracekit.server.spool import Entry, Spool
from tracekit.store import Store, served_sources

__all__ = ["Accepted", "Collector"]

log = logging.getLogger("tracekit.server")


@dataclass
class Accepted:
    """What a request got into the spool: spans (or lines) kept and refused."""

    kept: int
    refused: int
    message: str = ""


class Collector:
    """Owns the store while serving: writes go through the spool, reads through cursors.

    Args:
        config: the server's settings (``config.db`` is opened for writing).

    Raises:
        StoreLockedError: another process holds the store.
    """

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self._log_left = _log_size(config.db)  # before DuckDB reads (and ends) it
        self.store = _served(Store(config.db, wait=config.wait), config)
        try:
            self.spool = Spool(
                spool_dir(self.store.path), limit=config.spool_limit, deliver=self._deliver
            )
        except OSError as exc:
            self.store.close()
            raise ServeError(
                f"cannot use the spool directory {spool_dir(self.store.path)}"
                f" ({exc.strerror or exc})",
                hint="Make it a directory this user can write (the server keeps every"
                " acknowledged batch there until the store holds it).",
            ) from None
        self.loader = Loader(self.store, self.spool, settle=config.settle, dialects=config.dialects)
        # Cursors come from a connection no thread executes on: the loader's
        # connection is busy writing, and a DuckDB connection is not shared.
        self._reads = self.store.con.cursor()
        self.sources: dict[str, SourceStats] = {}
        self._stats_lock = threading.Lock()
        self._decode_cpu = 0.0
        self._started = False
        #: Called first when stopping (the gRPC server: its requests end before the spool).
        self.before_stop: list[Callable[[], object]] = []
        #: Called once everything acknowledged is loaded, before the store closes (the lake export).
        self.before_close: list[Callable[[], object]] = []
        self.busy_answers = 0  # 429 and 503 answered (overload, never a silent drop)
        self._stopped = False
        # Delivery and a reopen exclude each other: the new loader replays the
        # spool up to ``_replayed_to``, and what the writer delivers after is new.
        self._deliver_lock = threading.Lock()
        self._replayed_to = 0
        self.recovery = Recovery(self)

    def _deliver(
        self, start: int, end: int, entry: Entry | None, payload: bytes, items: int
    ) -> None:
        with self._deliver_lock:
            if start >= self._replayed_to:
                self.loader.deliver(start, end, entry, payload, items)

    @property
    def failed(self) -> str | None:
        """Why the store takes no writes now (a full disk), or None."""
        return self.loader.failed

    @property
    def unhealthy(self) -> str | None:
        """Why the server cannot take and store data now, or None (what ``/healthz`` says)."""
        if not self.spool.dir.is_dir():
            return f"the spool directory {self.spool.dir} is gone; restart the server"
        if self.loader.failed:
            return f"the store refused a write ({self.loader.failed})"
        if self.spool.failed:
            return self.spool.failed
        return self.loader.stalled()

    def reopen(self) -> None:
        """Open the store anew and replay the spool into it (after a failed load)."""
        self.loader.stop()
        with contextlib.suppress(duckdb.Error):
            self._reads.close()
        with contextlib.suppress(duckdb.Error):
            self.store.close()
        self.store = _served(Store(self.config.db, wait=5.0), self.config)
        self._reads = self.store.con.cursor()
        with self._deliver_lock:
            loader = Loader(
                self.store,
                self.spool,
                settle=self.config.settle,
                dialects=self.config.dialects,
            )
            loader.replay()
            self._replayed_to = loader.replayed_to
            self.loader = loader
        loader.start()

    def timed_decode(
        self, decode: Callable[[bytes, str], Entry], body: bytes, encoding: str
    ) -> Entry:
        """``decode(body, encoding)``, its CPU time counted as the decode stage's."""
        clock = time.thread_time()
        try:
            return decode(body, encoding)
        finally:
            spent = time.thread_time() - clock
            with self._stats_lock:
                self._decode_cpu += spent

    def stage_cpu(self) -> dict[str, float]:
        """CPU seconds by stage since the server started (threads' own; DuckDB's in ``process``)."""
        with self._stats_lock:
            decode = self._decode_cpu
        return {
            "decode (decoding process and request threads)": round(decode, 3),
            "spool (writer thread)": round(self.spool.cpu, 3),
            "load (loader thread)": round(self.loader.cpu["load"], 3),
            "derive (loader thread)": round(self.loader.cpu["derive"], 3),
            "process (all threads, DuckDB's too)": round(time.process_time(), 3),
        }

    def status_line(self) -> str:
        """Received, stored, rejected and waiting, for the log."""
        with self._stats_lock:
            received = sum(s.received for s in self.sources.values())
            refused = sum(s.refused for s in self.sources.values())
        line = (
            f"received {received}, loaded {self.loader.spans_loaded} spans,"
            f" refused {refused}, backlog {self.spool.backlog()} bytes"
        )
        return line + (f" (store refused a write: {self.failed})" if self.failed else "")

    def stop_line(self) -> str:
        """What a stop leaves: spans stored, pending (not in the store), rejected.

        Example: ``1,200 spans stored (3 already there), 0 pending, 2 rejected``
        """
        loader = self.loader
        pending = loader.queued + (1 if loader.loading else 0)
        text = (
            f"{loader.spans_stored:,} spans stored ({loader.duplicates:,} already there),"
            f" {pending:,} batches pending, {loader.rejected:,} spans rejected"
        )
        if loader.pending_spans:
            text += f"; {loader.pending_spans:,} spans of traces not derived yet"
        if self.failed:
            text += f"; the store refused a write ({self.failed}): the spool keeps the rest"
        else:
            text += "; everything acknowledged is in the store"
        return text

    def start(self) -> None:
        """Replay what the spool holds past the checkpoint, then start writing and loading."""
        import tracekit.store.hard
        import tracekit.store.ingest  # noqa: F401 - pyarrow

        replayed = self.loader.replay()
        if self._log_left is not None:
            log.warning(
                "the store was not closed cleanly: its log (%s.wal, %d bytes) is read only"
                " as far as it is whole",
                self.store.path.name,
                self._log_left,
            )
        if replayed:
            log.warning(
                "reloading spool bytes %d to %d (%d spans and lines in %d batches) that the"
                " store's file may lack; what it holds already is dropped as duplicates",
                self.loader.checkpoint_position,
                self.loader.replayed_to,
                self.loader.replayed_items,
                replayed,
            )
        self.spool.start()
        self.loader.start()
        self.recovery.start()
        self._started = True

    def stop(self) -> None:
        """Write what is queued, load everything spooled, checkpoint and close the store."""
        if self._stopped:
            return
        self._stopped = True
        for hook in self.before_stop:
            hook()
        if self._started:
            self.recovery.stop()
            self.spool.stop()
            self.loader.stop()
        for hook in self.before_close:
            hook()
        with contextlib.suppress(duckdb.Error):
            self._reads.close()
        try:
            self.store.con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            log.error("checkpoint failed: %s", exc)
        with contextlib.suppress(duckdb.Error):
            self.store.close()

    def read_cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor on the store's database: reads while the loader writes.

        Each caller (thread) should take its own and close it when done.

        Raises:
            StoreError: the store refused a write and is not reopened yet.
        """
        if self.failed:
            raise StoreError(
                f"the store is unavailable until it takes writes again ({self.failed})",
                hint="Free disk space; the server resumes on its own within seconds.",
            )
        return self._reads.cursor()

    def count(self, entry: Entry) -> Accepted:
        """Count an entry's spans (or lines) as received by its source."""
        first = entry.rejects[0][1] if entry.rejects else ""
        return self._count(
            entry.source, len(entry.spans) or len(entry.lines), len(entry.rejects), first
        )

    def _count(self, source: str, kept: int, refused: int, first_reason: str) -> Accepted:
        with self._stats_lock:
            stats = self.sources.setdefault(source, SourceStats())
            stats.received += kept + refused
            stats.refused += refused
            stats.batches += 1
        message = ""
        if refused:
            message = f"{refused} span{'s' if refused > 1 else ''} refused: {first_reason}"
        return Accepted(kept, refused, message)

    async def submit_decoded(self, decoded: Decoded) -> Accepted:
        """:meth:`submit` for a body decoded in the decoding process (already a payload).

        Raises:
            SpoolFullError: the spool is full (the client should retry later).
        """
        with self._stats_lock:
            self._decode_cpu += decoded.cpu
        futures = self.spool.append_payloads(decoded.payloads)
        for future in futures:  # written in one go: acknowledged once the last is durable
            await asyncio.wrap_future(future)
        return self._count(decoded.source, decoded.kept, decoded.refused, decoded.first_reason)

    async def submit(self, entry: Entry) -> Accepted:
        """Make the entry durable; returns once it is fsynced (then it may be acknowledged).

        Raises:
            SpoolFullError: the spool is full (the client should retry later).
        """
        future = self.spool.append(entry)
        await asyncio.wrap_future(future)
        return self.count(entry)

    def submit_blocking(self, entry: Entry, timeout: float | None = None) -> Accepted:
        """:meth:`submit` for a thread (the gRPC handlers)."""
        self.spool.append(entry).result(timeout)
        return self.count(entry)

    def source_counts(self) -> dict[str, SourceStats]:
        """What each source has received since the server started (a copy)."""
        with self._stats_lock:
            return {k: replace(v) for k, v in self.sources.items()}

    def backlog(self) -> dict[str, int]:
        """What waits to be stored: spool bytes, batches queued, spans held or loading."""
        return {
            "spool_backlog_bytes": self.spool.backlog(),
            "queued_batches": self.loader.queued,
            "loading": self.loader.loading,
            "pending_spans": self.loader.pending_spans,
        }

    def totals(self) -> tuple[int, int, int, int]:
        """``(acknowledged, stored, pending, rejected)`` since the start: the stop message.

        Spans and v1 lines alike. Rejected: refused at the request, by the
        rules that derive a trace, or by the store's load (kept in
        ``rejects``). Pending: acknowledged and not stored (queued, or
        everything queued while the store refused writes): the spool keeps
        it for the next start. Stored: the rest (a span stored whose trace
        is not derived yet is stored: a start derives it).
        """
        with self._stats_lock:
            received = sum(s.received for s in self.sources.values())
            refused = sum(s.refused for s in self.sources.values())
        loader = self.loader
        rejected = refused + loader.rejected_later
        queued = sum(item[3] for item in list(loader.queue_items()))
        pending = queued + loader.loading
        return received, max(received - rejected - pending, 0), pending, rejected

    def ingest_status(self) -> dict[str, Any]:
        """The live reconciliation, per source (what ``GET /api/ingest`` answers)."""
        cursor = self.read_cursor()
        try:
            rows = served_sources(cursor)
        finally:
            cursor.close()
        stored = {
            r[0]: {
                "loads": int(r[1]),
                "read": int(r[2] or 0),
                "accepted": int(r[3] or 0),
                "rejected": int(r[4] or 0),
                "duplicates": int(r[5] or 0),
            }
            for r in rows
        }
        with self._stats_lock:
            received = {k: (v.received, v.refused) for k, v in self.sources.items()}
        sources = {}
        for name in sorted(set(stored) | set(received)):
            counts = stored.get(
                name, {"loads": 0, "read": 0, "accepted": 0, "rejected": 0, "duplicates": 0}
            )
            got, refused = received.get(name, (0, 0))
            sources[name] = {"received": got, "refused_at_request": refused, **counts}
        return {
            "sources": sources,
            "line": _line(stored),
            "busy_answers": self.busy_answers,
            "spans_loaded": self.loader.spans_loaded,
            "pending_spans": self.loader.pending_spans,
            "derive_lag_s": round(self.loader.derive_lag(), 3),
            "derive_lag_max_s": round(self.loader.waiting.lag_max, 3),
            "skipped_spans": self.loader.skipped,
            "queued_batches": self.loader.queued,
            "loading": self.loader.loading,
            "spool_backlog_bytes": self.spool.backlog(),
            "loader_failed": self.loader.failed,
            "stage_cpu_s": self.stage_cpu(),
        }


def _log_size(db: Path) -> int | None:
    """The size of the store's DuckDB log if one is left (the last process did not close it)."""
    try:
        return db.with_name(db.name + ".wal").stat().st_size
    except OSError:
        return None


def _served(store: Store, config: ServeConfig) -> Store:
    """The store with the server's memory limit on its database (reads share it)."""
    store.con.execute(f"SET memory_limit = '{config.db_memory}'")
    return store


def _line(stored: dict[str, dict[str, int]]) -> str:
    """The line ``tracekit ingest`` prints, over what the server stored."""
    read = sum(s["read"] for s in stored.values())
    accepted = sum(s["accepted"] for s in stored.values())
    rejected = sum(s["rejected"] for s in stored.values())
    dups = sum(s["duplicates"] for s in stored.values())
    n = len(stored)
    word = "duplicate" if dups == 1 else "duplicates"
    return (
        f"ingested {n} source{'s' if n != 1 else ''}: {read} lines read = {accepted} accepted"
        f" + {rejected} rejected + {dups} {word}"
    )
