"""One ingest: every source read once, in chunks, then the derived tables.

Each chunk commits with its source's ``ingest_log`` counts, whose lines read
= accepted + rejected + duplicates at every moment; the derived tables are
rebuilt and classified in one transaction at the end. An ingest cut short (a
crash, a full disk) is finished by the next one, which continues reading where
it stopped and derives both (:mod:`tracekit.store.ingest_log`).

An ingest asked to stop (``stop``, which the CLI sets on Ctrl-C or SIGTERM,
also interrupting the running query) stops at the next chunk or at once, and
removes what it stored: the store is left derived and classified throughout,
and the next ingest reads those lines again.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import duckdb
import pyarrow as pa

from tracekit._util.gcpause import gc_paused
from tracekit._util.text import plural
from tracekit.errors import (
    IngestInterrupted,
    StoreError,
    StoreWriteError,
    TraceDamagedError,
    TraceFileError,
)
from tracekit.intake import formats
from tracekit.intake.otlp.batches import span_batches
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.sources import Source, expand, open_stream
from tracekit.store.classify import classify_store
from tracekit.store.derive import derive
from tracekit.store.ingest_log import (
    Resume,
    first_underived,
    mark_derived,
    next_ingest_id,
    open_row,
    record_progress,
    resume_point,
    transaction,
    undo_since,
    undo_unread,
)
from tracekit.store.load import Counts, load_batch, reject_rows
from tracekit.store.sources import Chunk, chunk_table, fingerprint, read_chunks, text_table
from tracekit.store.spans import load_spans
from tracekit.store.spans_derive import InHand, derive_spans, finish_in_hand, store_in_hand

__all__ = ["IngestReport", "SourceReport", "ingest_paths", "ingest_records"]

_WRITE_FAILURE = re.compile(r"could not write|no space left|file too large|disk (is )?full", re.I)
_ERROR_KIND = re.compile(r"^(\w+ )?Error: ")

Format = Literal["auto", "tracekit", "jsonl", "otlp"]
Progress = Callable[[int], None]
# Asked for the signal that asks the ingest to stop, 0 while none has.
Stop = Callable[[], int]
ProgressFactory = Callable[[int, int], contextlib.AbstractContextManager[Progress]]
_LOST = " the lines before it are stored, the rest of the file is lost"


@dataclass
class SourceReport:
    """What one ingest did with one source."""

    source: str
    format: str
    counts: Counts = field(default_factory=Counts)
    held_back: bool = False  # an incomplete last line was left for next time
    unchanged: bool = False  # nothing new since the last ingest
    skipped: str = ""  # why the source was not read at all
    damage: str = ""  # why a compressed source ended early, and where
    spans: SpanCounts | None = None  # where an OTLP source's spans went
    ingest_id: int | None = None  # its ingest_log row, once opened


@dataclass
class IngestReport:
    """What an ingest did: one :class:`SourceReport` per source, and totals."""

    sources: list[SourceReport] = field(default_factory=list)
    runs_touched: int = 0

    @property
    def totals(self) -> Counts:
        """The counts of every source added up."""
        total = Counts()
        for report in self.sources:
            total.add(report.counts)
        return total

    def reconciliation(self) -> str:
        """The line that accounts for every line read.

        Example: ``ingested 2 sources: 120 lines read = 117 accepted + 2 rejected + 1 duplicate``
        """
        t = self.totals
        text = (
            f"ingested {plural(len(self.sources), 'source')}: "
            f"{plural(t.read, 'line')} read = {t.accepted} accepted + {t.rejected} rejected"
            f" + {plural(t.duplicates, 'duplicate')}"
        )
        skipped = sum(bool(r.skipped) for r in self.sources)
        if skipped:
            text += f"; {skipped} not a trace, skipped"
        held = sum(r.held_back for r in self.sources)
        if held:
            text += (
                f" ({held} incomplete last line{'s' if held > 1 else ''} left for the next ingest)"
            )
        return text


def ingest_paths(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | os.PathLike[str]],
    *,
    format: Format = "auto",
    progress: ProgressFactory | None = None,
    stop: Stop | None = None,
    classify: bool = True,
) -> IngestReport:
    """Ingest files, directories, globs or ``-`` into the open store, derive and classify.

    ``stop`` is asked after each chunk; a signal number it returns stops the
    ingest (a query cut short by ``con.interrupt()`` stops it too).
    ``classify=False`` loads and derives only, leaving the runs to
    :func:`~tracekit.failures.classify_store` (the rules' own tests).

    Raises:
        IngestInterrupted: stopped before the end; nothing of this ingest is
            kept, and the store is as it was.
        TraceFileError: a source cannot be read.
        StoreWriteError: the store cannot be written (a full disk); what was
            committed before is kept, and the next ingest continues from it.
        StoreError: the records could not be stored or derived; the ingest was
            rolled back.
    """
    asked = stop or _never
    sources = expand(paths)
    report = IngestReport()
    try:
        since = first_underived(con)
        with _failures(con, since, asked):
            hand = _Hand(report)
            with _progress_for(sources, progress) as advance:
                for source in sources:
                    _check(asked)
                    sub = _ingest_source(con, source, format, advance, asked, hand)
                    report.sources.append(sub)
            _check(asked)
            # The derivation's records and rows hold no cycles: the collector waits.
            with transaction(con), gc_paused():
                _derive_spans(con, since, report, hand)
                report.runs_touched = derive(con, since)
                if classify:
                    classify_store(con, own_transaction=False)
                mark_derived(con, since)
        for sub in report.sources:
            if sub.damage:  # raised once every good line is stored and derived
                raise TraceDamagedError(sub.source, sub.damage, report=report)
    finally:
        for source in sources:
            if source.stdin:
                source.path.unlink(missing_ok=True)
    return report


def ingest_records(
    con: duckdb.DuckDBPyConnection,
    lines: list[bytes],
    *,
    source: str,
    first_line: int = 1,
    refused: list[tuple[int, str, str]] | None = None,
) -> IngestReport:
    """Ingest records already encoded as v1 JSON lines (a sink's buffer), as one source.

    ``refused`` are lines already found bad elsewhere (a collector's spans it
    could not map), as ``(line, raw, reason)``: read and rejected.
    """
    report = IngestReport()
    since = first_underived(con)
    with _failures(con, since), transaction(con):
        ingest_id = next_ingest_id(con)
        con.execute(
            "INSERT INTO ingest_log (ingest_id, source, format, first_line, end_line, started_at)"
            " VALUES (?, ?, 'tracekit', ?, ?, ?)",
            [ingest_id, source, first_line, first_line + len(lines) + len(refused or ()), _now()],
        )
        texts = [line.decode("utf-8", "replace").rstrip("\n") for line in lines]
        numbers = list(range(first_line, first_line + len(texts)))
        batch = text_table(numbers, [0] * len(texts), texts, texts)
        sub = SourceReport(source=source, format="tracekit")
        sub.counts = load_batch(con, batch, refused or [], ingest_id=ingest_id, source=source)
        record_progress(con, ingest_id, sub.counts)
        report.sources.append(sub)
        report.runs_touched = derive(con, since)
        classify_store(con, own_transaction=False)
        mark_derived(con, since)
    return report


class _Stopped(Exception):
    """Raised at a chunk's end when the ingest was asked to stop."""


def _never() -> int:
    return 0


def _check(stop: Stop) -> None:
    if stop():
        raise _Stopped


@contextlib.contextmanager
def _failures(con: duckdb.DuckDBPyConnection, since: int, stop: Stop = _never) -> Iterator[None]:
    """Turn a database error into one line; roll the ingest back unless the disk is at fault.

    A write that fails (a full disk) leaves the store as a crash would: every
    committed chunk is counted in ``ingest_log`` and the next ingest goes on
    from there. Any other failure, and a stop, removes what this ingest (and
    any earlier one cut short) stored, so no record is left underived.
    """
    try:
        yield
    except _Stopped:
        raise _interrupted(con, since, stop()) from None
    except duckdb.Error as exc:
        # An interrupted query can surface as the error of a statement after
        # it (in the aborted transaction): once asked to stop, any is the stop.
        if stop() or isinstance(exc, duckdb.InterruptException):
            raise _interrupted(con, since, stop()) from None
        if _is_write_failure(exc):
            raise StoreWriteError(
                f"cannot write the store ({_first_line(exc)}); what was stored is kept,"
                " and the next ingest goes on from it"
            ) from None
        try:
            names = ", ".join(undo_since(con, since)) or "the ingest"
        except duckdb.Error:
            names = "the ingest"
        raise StoreError(
            f"{names}: could not store and derive the records ({_first_line(exc)});"
            " nothing of this ingest was kept"
        ) from None


def _interrupted(con: duckdb.DuckDBPyConnection, since: int, signum: int) -> IngestInterrupted:
    undo_since(con, since)
    name = signal.Signals(signum or signal.SIGINT).name
    return IngestInterrupted(
        f"ingest interrupted ({name}): nothing of it was kept and the store is as it was;"
        " ingest the same sources again to store them",
        signum=signum or signal.SIGINT,
    )


def _is_write_failure(exc: duckdb.Error) -> bool:
    # A full disk surfaces as an IOException, as a failed commit
    # (TransactionException) or as a failed checkpoint (FatalException).
    return isinstance(exc, (duckdb.IOException, duckdb.FatalException)) or bool(
        _WRITE_FAILURE.search(str(exc))
    )


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return _ERROR_KIND.sub("", text.splitlines()[0]) if text else type(exc).__name__


@contextlib.contextmanager
def _progress_for(sources: list[Source], progress: ProgressFactory | None) -> Iterator[Progress]:
    if progress is None:
        yield lambda _n: None
        return
    total = sum(s.path.stat().st_size for s in sources)
    with progress(total, len(sources)) as advance:
        yield advance


@dataclass
class _Hand:
    """The traces derived from the spans in hand, and the sources whose counts they add to."""

    report: IngestReport
    spans: InHand | None = None  # opened by the first OTLP source
    current: SourceReport | None = None

    def start(self, con: duckdb.DuckDBPyConnection, report: SourceReport) -> InHand:
        """An OTLP source's spans are read next (``report``: its ``ingest_log`` row's)."""
        assert report.ingest_id is not None
        if self.spans is None:
            self.spans = InHand.open(con, report.ingest_id)
        self.spans.start(report.ingest_id, report.source)
        self.current = report
        return self.spans

    def count(self, con: duckdb.DuckDBPyConnection, counts: dict[int, Counts]) -> None:
        """Add records stored (or taken back) to their sources' counts and ``ingest_log`` rows."""
        by_id = {sub.ingest_id: sub for sub in self.report.sources if sub.ingest_id is not None}
        if self.current is not None and self.current.ingest_id is not None:
            by_id[self.current.ingest_id] = self.current
        for ingest_id, part in counts.items():
            sub = by_id.get(ingest_id)
            if sub is not None:
                sub.counts.add(part)
                record_progress(con, ingest_id, sub.counts)


def _derive_spans(
    con: duckdb.DuckDBPyConnection, since: int, report: IngestReport, hand: _Hand
) -> None:
    """Derive the traces that gained spans; count their records under the sources read.

    Those derived in hand are finished first; the store derives the rest.
    """
    hand.current = None
    in_hand = hand.spans
    if in_hand is not None:
        hand.count(con, finish_in_hand(con, in_hand))
    done = derive_spans(con, since, derived=in_hand.deriver.given() if in_hand else ())
    hand.count(con, done.counts)
    otlp = [sub for sub in report.sources if sub.spans is not None]
    if otlp and otlp[-1].spans is not None:
        if in_hand is not None:
            otlp[-1].spans.add(in_hand.spans)
        otlp[-1].spans.add(done.spans)


def _ingest_source(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    format: Format,
    advance: Progress,
    stop: Stop,
    hand: _Hand,
) -> SourceReport:
    size = source.path.stat().st_size
    undo_unread(con, source)
    resume = resume_point(con, source, size)
    ingest_id = next_ingest_id(con)
    chosen = formats.canonical(format)
    if chosen == formats.AUTO and not resume.unchanged:
        chosen = formats.detect(formats.sniff_source(source))
    if chosen == formats.OTHER:
        return SourceReport(
            source.label, chosen, skipped="a JSON document that is not OTLP (no resourceSpans)"
        )
    report = SourceReport(source=source.label, format=chosen, unchanged=resume.unchanged)
    report.ingest_id = ingest_id
    if chosen == "otlp":
        report.spans = SpanCounts()
    open_row(con, ingest_id, source, chosen, size, resume)
    end, end_line = resume.start, resume.first_line
    if not resume.unchanged:
        end, end_line = _read_source(con, source, chosen, resume, report, advance, stop, hand)
    mark = (end, end_line, fingerprint(source.path, size if source.gz else end))
    record_progress(con, ingest_id, report.counts, end=mark)
    return report


def _read_source(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    chosen: str,
    resume: Resume,
    report: SourceReport,
    advance: Progress,
    stop: Stop,
    hand: _Hand,
) -> tuple[int, int]:
    # A JSON document is complete only at its end: no line of it is held back.
    final = source.gz or source.stdin
    final = final or (chosen == "otlp" and formats.is_document(formats.sniff_source(source)))
    # Only a plain file of v1 lines can be continued from a chunk's end: OTLP
    # holds spans across chunks, and a gzip offset is not a file offset.
    resumable = not (source.gz or source.stdin or chosen == "otlp")
    end, end_line = resume.start, resume.first_line
    ingest_id = report.ingest_id
    assert ingest_id is not None
    try:
        with open_stream(source) as stream:
            read = _Compressed(stream)  # a .gz: its bar counts the file's bytes, not inflated ones
            chunks = read_chunks(
                stream, start=resume.start, first_line=resume.first_line, final=final
            )
            if chosen == "otlp":
                in_hand = hand.start(con, report)
                batches = span_batches(chunks, in_hand.deriver)
            else:
                batches = _jsonl_batches(chunks)
            for chunk, batch, refused in batches:
                next_end = (chunk.end, chunk.last_line)
                # A transaction per chunk keeps memory bounded; its ingest_log
                # counts (and, if resumable, its end) commit with its records.
                with transaction(con), gc_paused():
                    _load(con, chosen, batch, refused, report, source.label)
                    if hand.spans is not None and chosen == "otlp":
                        hand.count(con, store_in_hand(con, hand.spans, hand.spans.deriver.ready()))
                    mark = (*next_end, fingerprint(source.path, chunk.end)) if resumable else None
                    record_progress(con, ingest_id, report.counts, end=mark)
                if chunk.damage:
                    report.damage = f"{chunk.damage} at line {chunk.last_line};" + _LOST
                advance(chunk.end - end if not source.gz else read.step())
                end, end_line = next_end
                _check(stop)
    except OSError as exc:
        raise TraceFileError(source.label, f"cannot read ({exc})") from None
    report.held_back = not final and end < source.path.stat().st_size
    return end, end_line


class _Compressed:
    """How far a gzip stream has read its file: the progress of a ``.gz`` source, in file bytes."""

    def __init__(self, stream: object) -> None:
        self._file = getattr(stream, "fileobj", None)  # gzip.GzipFile's compressed file
        self._at = 0

    def step(self) -> int:
        """The compressed bytes read since the last call."""
        at = self._file.tell() if self._file is not None else self._at
        done, self._at = at - self._at, at
        return done


Refused = list[tuple[int, str, str]]
_Batch = tuple[Chunk, pa.Table, Refused]


def _jsonl_batches(chunks: Iterable[Chunk]) -> Iterator[_Batch]:
    for chunk in chunks:
        yield (chunk, *chunk_table(chunk))


def _load(
    con: duckdb.DuckDBPyConnection,
    chosen: str,
    batch: pa.Table,
    refused: Refused,
    report: SourceReport,
    label: str,
) -> None:
    """One chunk: v1 records into ``events``, or OTLP spans into ``spans`` (derived at the end)."""
    assert report.ingest_id is not None
    if chosen != "otlp":
        report.counts.add(load_batch(con, batch, refused, ingest_id=report.ingest_id, source=label))
        return
    taken = load_spans(con, batch, ingest_id=report.ingest_id, source=label)
    bad = reject_rows(con, refused, ingest_id=report.ingest_id, source=label)
    report.counts.add(
        Counts(read=bad + taken.duplicates, rejected=bad, duplicates=taken.duplicates)
    )
    assert report.spans is not None
    report.spans.duplicates += taken.duplicates


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
