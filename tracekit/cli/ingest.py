"""``tracekit ingest``: a store opened to ingest into, removed again if this command made it for nothing.

The ingest runs with Ctrl-C and SIGTERM deferred (:mod:`tracekit.cli.interrupt`):
a signal stops it at a safe point, with the store as it was.

A missing file or an input with no trace in it must not leave a new, empty
store behind: the next ``tracekit fleet`` would then report on nothing
instead of saying that there is no store. A store that was there before, or
that received any line (accepted or rejected), is always kept.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from tracekit._util.text import escape
from tracekit.cli.interrupt import deferred_interrupts
from tracekit.errors import IngestInterrupted, TraceFileError
from tracekit.store import Store, kept_lines
from tracekit.store.db import default_path

if TYPE_CHECKING:
    from tracekit.intake.otlp.dialect import Dialect
    from tracekit.store.ingest import Format, IngestReport, ProgressFactory

__all__ = ["ingest_into", "refuse_what_is_no_trace", "store_to_ingest_into"]

_HEAD = 1 << 16  # what is read of a named file to tell that it holds no trace
_LOOKED_AT = 5  # its first non-blank lines


def ingest_into(
    db: str | None,
    paths: Sequence[str],
    format: Format,
    progress: ProgressFactory | None,
    dialects: Sequence[Dialect] = (),
) -> IngestReport:
    """Ingest into the store at ``db``; a SIGINT or SIGTERM stops it with the store as it was.

    Raises:
        IngestInterrupted: a signal came before the command ended (also when
            the ingest had just finished: the message then says so).
    """
    with deferred_interrupts() as interrupts, store_to_ingest_into(db) as store:
        interrupts.watch(store.con)
        try:
            report = store.ingest(
                paths, format, progress=progress, stop=interrupts.signum, dialects=dialects
            )
        except duckdb.InterruptException:  # a query before the ingest's first step
            raise _interrupted(interrupts.signum(), "nothing of it was kept") from None
        finally:
            interrupts.watch(None)
        if interrupts.signum():
            done = f"it had finished ({report.reconciliation()})"
            raise _interrupted(interrupts.signum(), done)
    return report


def refuse_what_is_no_trace(paths: Sequence[str]) -> None:
    """Refuse, before anything is stored, a named file that is no trace (a README, a picture).

    As ``tracekit tree`` does: one line, exit code 2. A trace's lines are JSON
    (v1 records or OTLP documents); a file none of whose first lines opens a
    JSON value is something else. Directories are walked for trace files only,
    and ``-`` is read as it comes.

    Raises:
        TraceFileError: the first such file.
    """
    from tracekit.intake import formats

    for given in paths:
        if given == "-" or not os.path.isfile(given):
            continue
        why = _not_a_trace(given)
        if why is not None:
            raise TraceFileError(
                escape(given),
                f"not a trace ({why}); nothing was stored",
                hint=f"tracekit ingest reads {formats.described()}: see docs/trace-format.md.",
            )


def _not_a_trace(path: str) -> str | None:
    """Why the head of ``path`` is no trace, or None if it may be one (or cannot be read here)."""
    try:
        with open(path, "rb") as raw:
            zipped = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            head = gzip.GzipFile(fileobj=raw).read(_HEAD) if zipped else raw.read(_HEAD)
    except (OSError, EOFError):
        return None  # unreadable or damaged: the ingest itself says so, in its words
    if b"\0" in head:
        return "binary data"
    lines = [line.strip() for line in head.splitlines() if line.strip()][:_LOOKED_AT]
    if not lines or any(line[:1] in (b"{", b"[") for line in lines):
        return None
    first = lines[0][:40].decode("utf-8", "replace")
    return f"no JSON in its first {len(lines)} lines: {first!r}"


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
    size = 0 if created else path.stat().st_size
    store = Store(path)
    shrink = False
    try:
        for notice in [*store.notices, store.stale() if not created else None]:
            if notice:
                print(notice, file=sys.stderr)
        yield store
    except IngestInterrupted:  # nothing of it was kept: nor is the space it took
        shrink = _grew_for_nothing(store, path, size)
        raise
    finally:
        unused = created and _holds_nothing(store)
        store.close()
        if unused:
            _remove(path)
            if sys.exc_info()[0] is None:
                print(f"{path}: no store created, nothing was ingested", file=sys.stderr)
        elif shrink:
            _compact(path)


def _grew_for_nothing(store: Store, path: Path, size: int) -> bool:
    """The store file grew during an ingest that kept nothing, and is small enough to rewrite."""
    from tracekit.store.compact import COMPACT_UP_TO

    grew = path.exists() and path.stat().st_size > size
    return grew and size <= COMPACT_UP_TO and not _holds_nothing(store)


def _compact(path: Path) -> None:
    from tracekit.store.compact import compact

    with contextlib.suppress(duckdb.Error):  # the store is as it was, only larger
        compact(path)


def _holds_nothing(store: Store) -> bool:
    """No record and no rejected line (a failed connection counts as holding something)."""
    try:
        return kept_lines(store.con) == 0
    except duckdb.Error:
        return False


def _remove(path: Path) -> None:
    for file in (path, path.with_name(path.name + ".wal")):
        file.unlink(missing_ok=True)
