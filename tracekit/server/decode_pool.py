"""OTLP bodies decoded in a worker process: the per-span Python work off the server's GIL.

Decoding a protobuf or JSON body into checked spans is the server's largest
share of Python work per span. In a thread it holds the GIL the event loop
and the loader need; here it runs in a process of its own (``spawn``, Ctrl-C
ignored: the server stops it), with exactly the decoding of
:mod:`tracekit.server.decode`, and hands back what the spool writes: the
entry already encoded as its payload, and the counts the response needs. The
server never builds a Python object per span.

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

__all__ = ["DecodePool", "DecodeUnavailableError", "Decoded", "decode_spans_body"]

_OTLP: Final = "serve:otlp"
_WATCH: Final = 0.5  # seconds between looks at the parent


class DecodeUnavailableError(Exception):
    """The decoding process went away with the request: 503, retry."""


@dataclass(frozen=True)
class Decoded:
    """A body decoded: the spool payload of its entry and what the response says."""

    source: str
    payload: bytes  # the entry as the spool holds it (:func:`tracekit.server.spool.decode_payload`)
    kept: int
    refused: int
    first_reason: str  # why the first refused span was refused ("" if none)
    cpu: float  # CPU seconds the decoding took


def decode_spans_body(kind: str, body: bytes, encoding: str, limit: int) -> Decoded:
    """Inflate and decode an OTLP body (``kind`` ``protobuf`` or ``json``) as the spool keeps it.

    Raises:
        BadRequestError: the body cannot be read (400).
        TooLargeError: it inflates past ``limit`` (413).
    """
    from tracekit.server.decode import (
        inflate,
        received_otlp_json,
        received_otlp_proto,
        spans_entry,
    )
    from tracekit.server.spool import encode_payload

    clock = time.process_time()
    decode = received_otlp_proto if kind == "protobuf" else received_otlp_json
    entry = spans_entry(decode(inflate(body, encoding, limit)), _OTLP)
    reason = entry.rejects[0][1] if entry.rejects else ""
    payload = encode_payload(entry)
    return Decoded(
        _OTLP, payload, len(entry.spans), len(entry.rejects), reason, time.process_time() - clock
    )


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
    """One decoding process (two cores: the server, this, and the mapping share them)."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
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
            return await asyncio.get_running_loop().run_in_executor(
                pool, decode_spans_body, kind, body, encoding, limit
            )
        except BrokenProcessPool:
            if self._pool is pool:  # the first request to see it replaces it
                pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new()
            raise DecodeUnavailableError(
                "the decoding process went away; retry in a moment"
            ) from None

    def close(self) -> None:
        """Stop the worker once its requests are done."""
        self._pool.shutdown(wait=True, cancel_futures=False)


def name_process(name: str) -> None:
    """Name this process as ``ps`` and ``top`` show it (Linux; elsewhere nothing happens)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(name[:15])
