"""One ingest: every source read once, in chunks, then the derived tables.

The whole ingest is one transaction: a crash or Ctrl-C leaves the store as it
was. Each source gets an ``ingest_log`` row whose counts reconcile: lines
read = accepted + rejected + duplicates.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import duckdb

from tracekit.errors import TraceDamagedError, TraceFileError
from tracekit.store.derive import derive
from tracekit.store.load import Counts, drop_duplicates, load_batch
from tracekit.store.otlp_source import Batch, detect_format, is_document, otlp_batches
from tracekit.store.sources import (
    Chunk,
    Source,
    chunk_table,
    expand,
    fingerprint,
    open_stream,
    read_chunks,
    text_table,
)

__all__ = ["IngestReport", "SourceReport", "ingest_paths", "ingest_records"]

Format = Literal["auto", "tracekit", "jsonl", "otlp"]
Progress = Callable[[int], None]
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
        dup = "duplicate" if t.duplicates == 1 else "duplicates"
        text = (
            f"ingested {len(self.sources)} source{'s' if len(self.sources) != 1 else ''}: "
            f"{t.read} lines read = {t.accepted} accepted + {t.rejected} rejected"
            f" + {t.duplicates} {dup}"
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
) -> IngestReport:
    """Ingest files, directories, globs or ``-`` into the open store."""
    sources = expand(paths)
    report = IngestReport()
    try:
        since = _since(con)
        with _progress_for(sources, progress) as advance:
            for source in sources:
                report.sources.append(_ingest_source(con, source, format, advance))
        with _transaction(con):
            report.runs_touched = derive(con, since)
            _finished(con, since)
        for sub in report.sources:
            if sub.damage:  # raised once every good line is stored and derived
                raise TraceDamagedError(sub.source, sub.damage, report=report)
    finally:
        for source in sources:
            if source.stdin:
                source.path.unlink(missing_ok=True)
    return report


def ingest_records(
    con: duckdb.DuckDBPyConnection, lines: list[bytes], *, source: str, first_line: int = 1
) -> IngestReport:
    """Ingest records already encoded as v1 JSON lines (a sink's buffer), as one source."""
    report = IngestReport()
    since = _since(con)
    con.execute("BEGIN")
    try:
        ingest_id = _next_ingest_id(con)
        con.execute(
            "INSERT INTO ingest_log (ingest_id, source, format, first_line, started_at)"
            " VALUES (?, ?, 'tracekit', ?, ?)",
            [ingest_id, source, first_line, _now()],
        )
        texts = [line.decode("utf-8", "replace").rstrip("\n") for line in lines]
        numbers = list(range(first_line, first_line + len(texts)))
        batch = text_table(numbers, [0] * len(texts), texts, texts)
        sub = SourceReport(source=source, format="tracekit")
        sub.counts = load_batch(con, batch, [], ingest_id=ingest_id, source=source)
        duplicates = drop_duplicates(con, ingest_id)
        sub.counts.accepted -= duplicates
        sub.counts.duplicates += duplicates
        c = sub.counts
        con.execute(
            "UPDATE ingest_log SET end_line = ?, lines_read = ?, accepted = ?, rejected = ?,"
            " duplicates = ? WHERE ingest_id = ?",
            [first_line + len(texts), c.read, c.accepted, c.rejected, c.duplicates, ingest_id],
        )
        report.sources.append(sub)
        report.runs_touched = derive(con, since)
        _finished(con, since)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return report


@contextlib.contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _since(con: duckdb.DuckDBPyConnection) -> int:
    """The first ingest whose records are not derived yet: this one, or one cut short."""
    row = con.execute("SELECT min(ingest_id) FROM ingest_log WHERE finished_at IS NULL").fetchall()
    return int(row[0][0]) if row and row[0][0] is not None else _next_ingest_id(con)


def _finished(con: duckdb.DuckDBPyConnection, since: int) -> None:
    con.execute(
        "UPDATE ingest_log SET finished_at = ? WHERE ingest_id >= ? AND finished_at IS NULL",
        [_now(), since],
    )


@contextlib.contextmanager
def _progress_for(sources: list[Source], progress: ProgressFactory | None) -> Iterator[Progress]:
    if progress is None:
        yield lambda _n: None
        return
    total = sum(s.path.stat().st_size for s in sources)
    with progress(total, len(sources)) as advance:
        yield advance


def _next_ingest_id(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT coalesce(max(ingest_id), 0) + 1 FROM ingest_log").fetchall()[0]
    return int(row[0]) if row else 1


@dataclass
class _Resume:
    start: int = 0
    first_line: int = 1
    unchanged: bool = False


def _resume(con: duckdb.DuckDBPyConnection, source: Source, size: int) -> _Resume:
    """Where to start reading: after the last ingest's end, if the file only grew."""
    if source.key is None:
        return _Resume()
    rows = con.execute(
        "SELECT end_offset, end_line, hash, size FROM ingest_log"
        " WHERE path = ? AND finished_at IS NOT NULL ORDER BY ingest_id DESC LIMIT 1",
        [source.key],
    ).fetchall()
    if not rows or rows[0][0] is None:
        return _Resume()
    row = rows[0]
    end, end_line, digest, old_size = int(row[0]), int(row[1]), row[2], row[3]
    if source.gz:  # a compressed file is one unit: the same bytes, or read again
        same = old_size == size and digest == fingerprint(source.path, size)
        return _Resume(unchanged=same)
    if size < end or fingerprint(source.path, end) != digest:
        return _Resume()  # replaced or rewritten: read it all; duplicates are counted
    return _Resume(start=end, first_line=end_line, unchanged=size == end)


def _ingest_source(
    con: duckdb.DuckDBPyConnection, source: Source, format: Format, advance: Progress
) -> SourceReport:
    size = source.path.stat().st_size
    resume = _resume(con, source, size)
    ingest_id = _next_ingest_id(con)
    chosen: str = "tracekit" if format in ("tracekit", "jsonl") else format
    if chosen == "auto" and not resume.unchanged:
        chosen = detect_format(source)
    if chosen == "other":
        return SourceReport(
            source.label, chosen, skipped="a JSON document that is not OTLP (no resourceSpans)"
        )
    report = SourceReport(source=source.label, format=chosen, unchanged=resume.unchanged)
    con.execute(
        "INSERT INTO ingest_log (ingest_id, source, path, format, size, start_offset,"
        " first_line, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            ingest_id,
            source.label,
            source.key,
            chosen,
            size,
            resume.start,
            resume.first_line,
            _now(),
        ],
    )
    end, end_line = resume.start, resume.first_line
    if not resume.unchanged:
        end, end_line = _read_source(con, source, chosen, resume, ingest_id, report, advance)
        with _transaction(con):
            duplicates = drop_duplicates(con, ingest_id)
        report.counts.accepted -= duplicates
        report.counts.duplicates += duplicates
    _finish_log(con, source, ingest_id, report, end, end_line, size)
    return report


def _read_source(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    chosen: str,
    resume: _Resume,
    ingest_id: int,
    report: SourceReport,
    advance: Progress,
) -> tuple[int, int]:
    # A JSON document is complete only at its end: no line of it is held back.
    final = source.gz or source.stdin or (chosen == "otlp" and is_document(source))
    end, end_line = resume.start, resume.first_line
    try:
        with open_stream(source) as stream:
            chunks = read_chunks(
                stream, start=resume.start, first_line=resume.first_line, final=final
            )
            batches = otlp_batches(chunks) if chosen == "otlp" else _jsonl_batches(chunks)
            for chunk, batch, refused in batches:
                # A transaction per chunk keeps memory bounded; a crash leaves the
                # ingest unfinished, and the next ingest derives what it stored.
                with _transaction(con):
                    counts = load_batch(
                        con, batch, refused, ingest_id=ingest_id, source=source.label
                    )
                report.counts.add(counts)
                if chunk.damage:
                    report.damage = f"{chunk.damage} at line {chunk.last_line};" + _LOST
                advance(chunk.end - end if not source.gz else len(chunk.data))
                end, end_line = chunk.end, chunk.first_line + chunk.data.count(b"\n")
    except OSError as exc:
        raise TraceFileError(source.label, f"cannot read ({exc})") from None
    report.held_back = not final and end < source.path.stat().st_size
    return end, end_line


def _jsonl_batches(chunks: Iterable[Chunk]) -> Iterator[Batch]:
    for chunk in chunks:
        yield (chunk, *chunk_table(chunk))


def _finish_log(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    ingest_id: int,
    report: SourceReport,
    end: int,
    end_line: int,
    size: int,
) -> None:
    digest = fingerprint(source.path, size if source.gz else end)
    c = report.counts
    con.execute(
        "UPDATE ingest_log SET hash = ?, end_offset = ?, end_line = ?, lines_read = ?,"
        " accepted = ?, rejected = ?, duplicates = ? WHERE ingest_id = ?",
        [digest, end, end_line, c.read, c.accepted, c.rejected, c.duplicates, ingest_id],
    )


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
