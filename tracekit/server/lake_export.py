"""``tracekit serve --lake DIR --export-every 5m``: export into a shared lake while serving.

Each server is one writer of the lake (its own files and manifest,
:mod:`tracekit.lake.export`), so any number of collectors export into one
lake without stopping and without a common lock. A thread exports the
store every interval from a snapshot read beside the loader (one read
transaction: the tables agree with each other), writing only the partitions
that changed; a last export runs once the loader has stored everything
acknowledged, before the store closes. An export that fails is logged and
tried again at the next interval: the lake keeps its previous files whole.

Example:
    >>> every_seconds("5m"), every_seconds("90s"), every_seconds("1.5h")
    (300.0, 90.0, 5400.0)
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tracekit._util.text import duration_ms
from tracekit.errors import TracekitError
from tracekit.lake.export import ExportReport, default_writer, export_store
from tracekit.server.config import ServeError

if TYPE_CHECKING:
    from tracekit.server.collector import Collector

__all__ = ["LakeExporter", "LakeOptions", "every_seconds"]

log = logging.getLogger("tracekit.server")


def every_seconds(text: str) -> float:
    """An interval such as ``30s``, ``5m`` or ``1h`` in seconds (a bare number: seconds).

    Raises:
        ServeError: not an interval, or not positive.
    """
    try:
        ms = duration_ms(text, bare=False)
        seconds = float(text) if ms is None else ms / 1000.0
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ServeError(f"--export-every {text!r}: not an interval", hint="Give e.g. 30s, 5m, 1h.")
    return seconds


@dataclass(frozen=True, slots=True)
class LakeOptions:
    """Where and how often a server exports.

    Attributes:
        lake: the lake folder (shared with other writers).
        every: seconds between exports.
        writer: this server's id in the lake (default: host and store name).
    """

    lake: Path
    every: float = 300.0
    writer: str | None = None


class LakeExporter:
    """The exporting thread of one server.

    Args:
        collector: the running server's collector (its store is read through a cursor).
        options: the lake, the interval and the writer id.
    """

    def __init__(self, collector: Collector, options: LakeOptions) -> None:
        self.collector = collector
        self.options = options
        self.writer = options.writer or default_writer(collector.store.path)
        self.exports = 0
        self.last: ExportReport | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="tracekit-lake", daemon=True)

    def start(self) -> None:
        """Export every interval from now on (the first one after one interval)."""
        self._thread.start()

    def export(self) -> ExportReport | None:
        """Export once now; a failure is logged (the next interval tries again)."""
        with self._lock:
            cursor = self.collector.read_cursor()
            try:
                self.last = export_store(cursor, self.options.lake, writer=self.writer)
                self.exports += 1
                return self.last
            except TracekitError as exc:
                log.error("export to %s failed: %s", self.options.lake, exc)
                return None
            except Exception:  # never let the exporter take the server down
                log.exception("export to %s failed", self.options.lake)
                return None
            finally:
                cursor.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.options.every):
            self.export()

    def stop(self) -> None:
        """Stop the thread, then export what the store holds (call once all is loaded)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.export()
