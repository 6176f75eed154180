"""OTLP bodies decoded in a worker process: the per-span Python work off the server's GIL.

Decoding a protobuf or JSON body into checked spans is the server's largest
share of Python work per span. In a thread it holds the GIL the event loop
and the loader need; here it runs in a process of its own (``spawn``, Ctrl-C
ignored: the server stops it), with exactly the decoding of
:mod:`tracekit.server.decode`, and hands back what the spool writes: the
entries already encoded as their payloads (a slice of a big body each), and
the counts the response needs. The server never builds a Python object per span.

A worker that dies (killed, out of memory) fails the requests it had; the
pool is replaced and those requests get 503 with ``Retry-After``: nothing
was acknowledged, the exporters send again. A worker whose server is gone
(even by SIGKILL) exits within half a second.

Example:
    >>> import json
    >>> span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "x", "startTimeUnixNano": "1"}
    >>> body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    >>> decoded = decode_spans_body("json", body, "", 1 << 20)
    >>> decoded.kept, decoded.refused
    (1, 0)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tracekit.server.health import cpu_ticks

__all__ = ["DecodePool", "DecodeUnavailableError", "Decoded", "decode_spans_body"]

_OTLP: Final = "serve:otlp"
_WATCH: Final = 0.5  # seconds between looks at the parent


class DecodeUnavailableError(Exception):
    """The decoding process went away with the request: 503, retry."""


@dataclass(frozen=True)
class Decoded:
    """A body decoded: the spool payloads of its entries and what the response says."""

    source: str
    #: Each entry as the spool holds it (:func:`tracekit.server.spool.decode_payload`),
    #: with its spans: a big body comes as several, a slice of it each.
    payloads: list[tuple[bytes, int]]
    kept: int
    refused: int
    first_reason: str  # why the first refused span was refused ("" if none)
    cpu: float  # CPU seconds the decoding took


def decode_spans_body(kind: str, body: bytes, encoding: str, limit: int) -> Decoded:
    """Inflate and decode an OTLP body (``kind`` ``protobuf`` or ``json``) as the spool keeps it.

    Spans are encoded a slice at a time (:data:`~tracekit.server.decode.SLICE`), so
    the spool, the loader and the quarantine hold a slice of a big body at a time.

    Raises:
        BadRequestError: the body cannot be read (400).
        TooLargeError: it inflates past ``limit`` (413).
    """
    from tracekit.server.decode import (
        inflate,
        received_otlp_json,
        received_otlp_proto,
        spans_entries,
    )
    from tracekit.server.spool import encode_payload

    clock = time.process_time()
    data = inflate(body, encoding, limit)
    del body
    decode = received_otlp_proto if kind == "protobuf" else received_otlp_json
    received = decode(data)
    del data
    payloads: list[tuple[bytes, int]] = []
    kept = refused = 0
    reason = ""
    for entry in spans_entries(received, _OTLP):
        payloads.append((encode_payload(entry), len(entry.spans)))
        kept, refused = kept + len(entry.spans), refused + len(entry.rejects)
        reason = reason or (entry.rejects[0][1] if entry.rejects else "")
    return Decoded(_OTLP, payloads, kept, refused, reason, time.process_time() - clock)


def _start_worker(server: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops us
    name_process("tracekit-decode")
    # The pool's queues never close under a killed server (the worker holds their
    # writing end too): watch the parent instead, and go with it.
    # (The server's pid is given: it may be gone before this runs.)
    threading.Thread(target=_exit_with, args=(server,), daemon=True).start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_WATCH)
    os._exit(0)


class DecodePool:
    """One decoding process (two cores: the server, this, and the mapping share them).

    Args:
        workers: processes.
        deadline: seconds the decoding process may do no work (use no CPU)
            while a request waits for it; past it the process is killed and
            replaced, and the request gets 503.
    """

    def __init__(self, workers: int = 1, deadline: float = 10.0) -> None:
        self.workers = workers
        self.deadline = deadline
        self.done_at = time.monotonic()  # when a decoding last finished (or the pool started)
        self._pool = self._new()

    def _new(self) -> ProcessPoolExecutor:
        import multiprocessing as mp

        pool = ProcessPoolExecutor(
            self.workers,
            mp_context=mp.get_context("spawn"),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )
        pool.submit(int)  # start the process now, not at the first request
        return pool

    async def decode(self, kind: str, body: bytes, encoding: str, limit: int) -> Decoded:
        """:func:`decode_spans_body` in the worker process.

        Raises:
            DecodeUnavailableError: the worker went away; the pool is replaced.
        """
        pool = self._pool
        try:
            work = asyncio.get_running_loop().run_in_executor(
                pool, decode_spans_body, kind, body, encoding, limit
            )
            decoded = await self._within_deadline(work, pool)
        except BrokenProcessPool:
            self._replace(pool, kill=False)
            raise DecodeUnavailableError(
                "the decoding process went away; retry in a moment"
            ) from None
        return decoded

    async def _within_deadline(
        self, work: asyncio.Future[Decoded], pool: ProcessPoolExecutor
    ) -> Decoded:
        """The decoding's result, unless the process stops working for ``deadline`` seconds.

        A big body may take long on a busy machine: the request waits while
        the process uses CPU. A process that uses none while a request waits
        for it (stopped, stuck) is killed and replaced, and the request gets
        503 ``deadline`` seconds after the process last worked.
        """
        ticks, moved = self._ticks(), time.monotonic()
        while True:
            done, _ = await asyncio.wait({work}, timeout=min(self.deadline / 4, 1.0))
            if done:
                self.done_at = time.monotonic()
                return work.result()
            now_ticks = self._ticks()
            if now_ticks != ticks or self.done_at > moved:
                ticks, moved = now_ticks, time.monotonic()
            elif time.monotonic() - moved > self.deadline:
                work.cancel()
                self._replace(pool, kill=True)
                raise DecodeUnavailableError(
                    f"the body was not decoded: the decoding process did no work for"
                    f" {self.deadline:g} s (it is replaced); retry in a moment"
                )

    def _ticks(self) -> int:
        return sum(cpu_ticks(pid) for pid in self.pids())

    def _replace(self, pool: ProcessPoolExecutor, *, kill: bool) -> None:
        """A new pool for a broken or stuck one (the first request to see it replaces it)."""
        if self._pool is not pool:
            return
        if kill:
            for pid in self.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new()
        self.done_at = time.monotonic()

    def pids(self) -> list[int]:
        """The decoding processes' ids."""
        processes = getattr(self._pool, "_processes", None) or {}
        return list(processes)

    def close(self) -> None:
        """Stop the worker once its requests are done."""
        self._pool.shutdown(wait=True, cancel_futures=False)


def name_process(name: str) -> None:
    """Name this process as ``ps`` and ``top`` show it (Linux; elsewhere nothing happens)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(name[:15])
