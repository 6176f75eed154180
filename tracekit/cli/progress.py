"""A progress bar for long ingests: on a terminal only, quiet otherwise.

rich's progress module (0.1 s to import) is loaded when a bar is drawn: most
ingests are of inputs too small for one.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

__all__ = ["progress_bar", "trace_bar"]

_MIN_BYTES = 64 << 20  # smaller inputs take well under a few seconds


Advance = Callable[[int], None]


def progress_bar() -> Callable[[int, int], contextlib.AbstractContextManager[Advance]] | None:
    """Return a progress factory for :meth:`Store.ingest`, or None when not on a terminal."""
    if not sys.stderr.isatty():
        return None

    @contextlib.contextmanager
    def start(total: int, sources: int) -> Iterator[Advance]:
        if total < _MIN_BYTES:
            yield lambda _n: None
            return
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        bar = Progress(
            TextColumn(f"ingesting {sources} source{'s' if sources != 1 else ''}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            transient=True,
        )
        task = bar.add_task("ingest", total=total)
        with bar:
            yield lambda n: bar.advance(task, n)

    return start


def trace_bar() -> Callable[[int], contextlib.AbstractContextManager[Advance]] | None:
    """Return a progress factory counting traces (``tracekit rederive``), or None off a terminal."""
    if not sys.stderr.isatty():
        return None

    @contextlib.contextmanager
    def start(total: int) -> Iterator[Advance]:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("deriving traces again"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeRemainingColumn(),
            transient=True,
        )
        task = bar.add_task("rederive", total=total)
        with bar:
            yield lambda n: bar.advance(task, n)

    return start
