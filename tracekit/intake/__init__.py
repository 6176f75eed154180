"""Read a trace file into v1 records, whatever it was written as.

:func:`read_trace` opens a path, ``-`` (standard input) or a gzip file (found
by its magic bytes, not its name), tells its format by content (:mod:`tracekit.intake.formats`: a first object
with ``resourceSpans`` is OTLP), reads it with that format's decode and returns a
:class:`ReadResult`: the good records, the bad lines, and how many lines were
read. A bad line never loses the good ones beside it.

Example:
    >>> result = read_trace("sample_traces/agent_orchestrator.jsonl")
    >>> len(result.events), result.bad_lines, result.lines_read
    (10, [], 10)
"""

from __future__ import annotations

import gzip
import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Literal

from tracekit.errors import TraceFileError, TraceReadError
from tracekit.intake import formats
from tracekit.intake.jsonl import ReadResult
from tracekit.intake.lines import Chunk, guarded, sniff, split_lines
from tracekit.intake.otlp.dialect import Dialect
from tracekit.intake.otlp.dialects import using
from tracekit.intake.sources import open_path

__all__ = ["ReadResult", "read_trace"]

Format = Literal["auto", "tracekit", "jsonl", "otlp"]
_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 22  # bytes read at a time; decoded as a block of whole lines


def read_trace(
    source: str | os.PathLike[str],
    *,
    format: Format = "auto",
    strict: bool = False,
    dialects: Sequence[Dialect] = (),
) -> ReadResult:
    """Read every record of a trace; bad lines are collected, not fatal.

    Lines are split as everywhere in tracekit (:mod:`tracekit.intake.lines`):
    at ``\\n``, a BOM dropped, a line over ``MAX_LINE_BYTES`` refused by its
    number without being read whole.

    Args:
        source: a file path, ``-`` for standard input; gzip is detected.
        format: ``"auto"`` (by content) or a name of :mod:`tracekit.intake.formats`
            (``"tracekit"``, alias ``"jsonl"``: v1; ``"otlp"``).
        strict: raise the first bad line instead of collecting it.
        dialects: the user's dialects for OTLP spans (``--dialect FILE``,
            :func:`tracekit.intake.otlp.dialect.find_dialects`).

    Raises:
        TraceFileError: the file is missing, unreadable or not a trace.
        TraceReadError: with ``strict``, the first bad line.
    """
    path = os.fspath(source)
    refused: list[tuple[TraceReadError, str]] = []  # with the chunk's damage, if any
    with _open(path) as source_, using(dialects):
        chunks = _chunks(source_, path)
        found, head = sniff(chunks)
        blocks = _blocks(itertools.chain(head, chunks), path, refused, strict=strict)
        name = formats.detect(found) if format == "auto" else format
        # A document no format claims is read as v1 lines: each is refused by its number.
        entry = formats.get("tracekit" if name == formats.OTHER else name)
        result = entry.read(blocks, path, strict=strict, document=formats.is_document(found))
    if refused:  # the damage of a gzip stream is no line read; a long line is one
        result.lines_read += sum(e.reason != damage for e, damage in refused)
        errors = [e for e, _ in refused]
        result.bad_lines = sorted([*result.bad_lines, *errors], key=lambda e: e.line)
    return result


class _Source:
    """A context manager over a binary stream that closes only what it opened."""

    def __init__(self, stream: IO[bytes], owned: list[IO[bytes]], piece: int) -> None:
        self.stream = stream
        self.owned = owned
        self.piece = piece  # bytes per read

    def __enter__(self) -> _Source:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in self.owned:
            stream.close()


def _open(path: str) -> _Source:
    """Open a path, ``-``, a pipe or a FIFO; gzip is told by a peek, never a seek."""
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
        owned: list[IO[bytes]] = []
    else:
        raw = open_path(path)
        owned = [raw]
    peek = getattr(raw, "peek", None)
    head = peek(2)[:2] if peek is not None else b""
    if head == _GZIP_MAGIC:
        unzipped = gzip.GzipFile(fileobj=raw, mode="rb")
        # Small reads: a cut stream fails the read that reaches the cut, and
        # everything read before it is kept.
        return _Source(unzipped, [unzipped, *owned], 1 << 16)  # type: ignore[arg-type,list-item]
    return _Source(raw, owned, _BLOCK)


def _chunks(source: _Source, path: str) -> Iterator[Chunk]:
    read = guarded(source.stream.read)

    def read_or_fail(size: int) -> bytes:
        try:
            return read(size)
        except OSError as exc:
            raise TraceFileError(path, f"cannot read ({exc.strerror or exc})") from None

    return split_lines(read_or_fail, piece=source.piece, chunk=_BLOCK, keep_tail=lambda _: True)


def _blocks(
    chunks: Iterable[Chunk], path: str, refused: list[tuple[TraceReadError, str]], *, strict: bool
) -> Iterator[bytes]:
    """The chunks' bytes; over-long lines and damage are collected in ``refused``.

    With ``strict`` the first of them is raised, after the lines before it were read.
    """
    for chunk in chunks:
        if chunk.data:  # a last line without a newline is told apart: it may be cut short
            yield chunk.data[:-1] if chunk.unended else chunk.data
        for number, text, reason in chunk.refused(200):
            error = TraceReadError(path, number, text, reason)
            if strict:
                raise error
            refused.append((error, chunk.damage))
