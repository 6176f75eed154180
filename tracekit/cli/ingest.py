"""``tracekit ingest``: a store opened to ingest into, removed again if this command made it for nothing.

The ingest runs with Ctrl-C and SIGTERM deferred (:mod:`tracekit.cli.interrupt`):
a signal stops it at a safe point, with the store as it was.

A missing file or an input with no trace in it must not leave a new, empty
store behind: the next ``tracekit fleet`` would then report on nothing
instead of saying that there is no store. A store that was there before, or
that received any line (accepted or rejected), is always kept.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from tracekit.cli.interrupt import deferred_interrupts
from tracekit.errors import IngestInterrupted
from tracekit.store import Store
from tracekit.store.db import default_path

if TYPE_CHECKING:
    from tracekit.store.ingest import Format, IngestReport, ProgressFactory

__all__ = ["ingest_into", "store_to_ingest_into"]


def ingest_into(
    db: str | None, paths: Sequence[str], format: Format, progress: ProgressFactory | None
) -> IngestReport:
    """Ingest into the store at ``db``; a SIGINT or SIGTERM stops it with the store as it was.

    Raises:
        IngestInterrupted: a signal came before the command ended (also when
            the ingest had just finished: the message then says so).
    """
    with deferred_interrupts() as interrupts, store_to_ingest_into(db) as store:
        interrupts.watch(store.con)
        try:
            report = store.ingest(paths, format, progress=progress, stop=interrupts.signum)
        except duckdb.InterruptException:  # a query before the ingest's first step
            raise _interrupted(interrupts.signum(), "nothing of it was kept") from None
        finally:
            interrupts.watch(None)
        if interrupts.signum():
            done = f"it had finished ({report.reconciliation()})"
            raise _interrupted(interrupts.signum(), done)
    return report


def _interrupted(signum: int, what: str) -> IngestInterrupted:
    signum = signum or signal.SIGINT
    name = signal.Signals(signum).name
    return IngestInterrupted(f"ingest interrupted ({name}): {what}", signum=signum)


@contextmanager
def store_to_ingest_into(db: str | None) -> Iterator[Store]:
    """Open (or create) the store; on leaving, remove it if it is new and holds nothing.

    Whether the body ended well or raised, a store this call created and
    into which not one line went is closed and its files deleted.
    """
    path = Path(db) if db is not None else default_path()
    created = not path.exists()
    store = Store(path)
    try:
        for notice in [*store.notices, store.stale() if not created else None]:
            if notice:
                print(notice, file=sys.stderr)
        yield store
    finally:
        unused = created and _holds_nothing(store)
        store.close()
        if unused:
            _remove(path)
            if sys.exc_info()[0] is None:
                print(f"{path}: no store created, nothing was ingested", file=sys.stderr)


def _holds_nothing(store: Store) -> bool:
    """No record and no rejected line (a failed connection counts as holding something)."""
    try:
        row = store.con.execute(
            "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM rejects)"
        ).fetchone()
    except duckdb.Error:
        return False
    return row is not None and row[0] == 0


def _remove(path: Path) -> None:
    for file in (path, path.with_name(path.name + ".wal")):
        file.unlink(missing_ok=True)
