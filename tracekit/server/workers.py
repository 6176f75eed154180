"""The threads requests run on: ingest and reads apart, so that no read load slows ingest.

Decoding a batch and waiting for its fsync is what an exporter waits for; a
read (a slow SQL query, a dashboard) may take seconds. Each has its own
pool: ingest's is never shared, and reads are capped in number (past
``max_reads`` at once a read gets 429 with ``Retry-After``) and in time.

Example:
    >>> import asyncio
    >>> workers = Workers(max_reads=2)
    >>> asyncio.run(workers.ingest(sum, [1, 2]))
    3
    >>> workers.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

__all__ = ["ReadsBusyError", "Workers"]

T = TypeVar("T")
_INGEST_THREADS: Final = 4


class ReadsBusyError(Exception):
    """As many reads run as may: 429."""


class Workers:
    """Two thread pools: one for ingest (decode), one for reads (capped)."""

    def __init__(self, max_reads: int) -> None:
        self.max_reads = max_reads
        self.reads = 0  # reads running or queued (the event loop's thread only)
        self._ingest = ThreadPoolExecutor(_INGEST_THREADS, thread_name_prefix="tracekit-ingest")
        self._read = ThreadPoolExecutor(max_reads, thread_name_prefix="tracekit-read")

    async def ingest(self, work: Callable[..., T], *args: object) -> T:
        """Run ``work(*args)`` on an ingest thread."""
        return await asyncio.get_running_loop().run_in_executor(self._ingest, work, *args)

    async def read(self, work: Callable[[], T]) -> T:
        """Run ``work()`` on a read thread.

        Raises:
            ReadsBusyError: ``max_reads`` reads are running already.
        """
        if self.reads >= self.max_reads:
            raise ReadsBusyError(f"{self.max_reads} reads are running; retry in a moment")
        self.reads += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._read, work)
        finally:
            self.reads -= 1

    def close(self) -> None:
        """Let the threads end once their work is done."""
        self._ingest.shutdown(wait=False)
        self._read.shutdown(wait=False)
