"""Read a trace file into v1 records, whatever it was written as.

:func:`read_trace` opens a path, ``-`` (standard input) or a gzip file (found
by its magic bytes, not its name), tells v1 JSON lines from OTLP JSON by
content (a first object with ``resourceSpans`` is OTLP) and returns a
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
import zlib
from collections.abc import Iterator
from typing import IO, Literal

import msgspec

from tracekit._util.gcpause import gc_paused
from tracekit.errors import TraceFileError, TracekitError, TraceReadError
from tracekit.readers.jsonl import ReadResult, read_jsonl_blocks
from tracekit.readers.otlp import OtlpConverter

__all__ = ["ReadResult", "read_trace"]

Format = Literal["auto", "jsonl", "otlp"]
_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 22  # bytes read at a time; decoded as a block of whole lines
_SNIFF = 1 << 16  # how far into a pretty-printed document to look for resourceSpans


def read_trace(
    source: str | os.PathLike[str], *, format: Format = "auto", strict: bool = False
) -> ReadResult:
    """Read every record of a trace; bad lines are collected, not fatal.

    Args:
        source: a file path, ``-`` for standard input; gzip is detected.
        format: ``"auto"`` (by content), ``"jsonl"`` (v1) or ``"otlp"``.
        strict: raise the first bad line instead of collecting it.

    Raises:
        TraceFileError: the file is missing, unreadable or not a trace.
        TraceReadError: with ``strict``, the first bad line.
    """
    path = os.fspath(source)
    damage: list[str] = []
    with _open(path) as source_:
        blocks = _blocks(source_, path, damage)
        first = next(blocks, b"")
        chosen = format if format != "auto" else _detect(first)
        rest = itertools.chain([first], blocks)
        if chosen == "otlp":
            lines = (line for block in rest for line in block.splitlines(keepends=True))
            result = _read_otlp(lines, path, strict=strict)
        else:
            result = read_jsonl_blocks(rest, path, strict=strict)
    if damage:  # the lines before the damage are kept; the rest is one bad line
        error = TraceReadError(path, result.lines_read + 1, "", damage[0])
        if strict:
            raise error
        result.bad_lines.append(error)
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
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        owned: list[IO[bytes]] = []
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed by _Source
            head = raw.read(2)
            raw.seek(0)
        except IsADirectoryError:
            raise TraceFileError(path, "is a directory, not a trace file") from None
        except FileNotFoundError:
            raise TraceFileError(path, "no such file") from None
        except OSError as exc:
            raise TraceFileError(path, f"cannot read ({exc.strerror or exc})") from None
        owned = [raw]
    if head == _GZIP_MAGIC:
        unzipped = gzip.GzipFile(fileobj=raw, mode="rb")
        # Small reads: a cut stream fails the read that reaches the cut, and
        # everything read before it is kept.
        return _Source(unzipped, [unzipped, *owned], 1 << 16)  # type: ignore[arg-type,list-item]
    return _Source(raw, owned, _BLOCK)


def _blocks(source: _Source, path: str, damage: list[str]) -> Iterator[bytes]:
    """Read blocks of whole lines; a damaged gzip stream ends the file, noted in ``damage``."""
    rest = b""
    while True:
        try:
            block = source.stream.read(source.piece)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            # A crashed writer leaves a cut-off gzip stream: keep what came before.
            damage.append(f"gzip stream damaged ({exc or 'it ends early'})")
            break
        except OSError as exc:
            raise TraceFileError(path, f"cannot read ({exc.strerror or exc})") from None
        if not block:
            break
        block = rest + block if rest else block
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        if cut:
            yield block[:cut]
    if rest:
        yield rest


def _detect(first: bytes) -> str:
    """A first object with ``resourceSpans`` is OTLP; anything else is v1."""
    head = first.lstrip()
    line = head[: head.find(b"\n")] if b"\n" in head else head
    if _opens_document(line):
        return "otlp" if b'"resourceSpans"' in head[:_SNIFF] else "jsonl"
    return "otlp" if b'"resourceSpans"' in line else "jsonl"


def _opens_document(line: bytes) -> bool:
    """A first line of just ``{`` or ``[`` starts a pretty-printed JSON document."""
    return line.strip() in (b"{", b"[")


def _read_otlp(lines: Iterator[bytes], path: str, *, strict: bool) -> ReadResult:
    """Read OTLP JSON: one ``TracesData`` object per line, or one whole document.

    A trace's spans may be spread over many lines, so every line is fed to
    one converter; a trace's records are made once it looks complete (its
    root span ended, then 64 lines without it), the rest at the end.
    """
    with gc_paused():  # millions of acyclic spans: collections would only walk them
        return _read_otlp_lines(lines, path, strict=strict)


def _read_otlp_lines(lines: Iterator[bytes], path: str, *, strict: bool) -> ReadResult:
    converter = OtlpConverter()
    result = ReadResult(path=path, format="otlp")
    first = list(itertools.islice(lines, 1))
    while first and not first[-1].strip():
        first.extend(itertools.islice(lines, 1))
    if first and _opens_document(first[-1]):  # one pretty-printed document
        body = b"".join(itertools.chain(first, lines))
        _feed(result, converter, body, 1, strict=strict)
        result.lines_read = body.count(b"\n") + (not body.endswith(b"\n"))
    else:
        for number, line in enumerate(itertools.chain(first, lines), 1):
            if line.strip():
                result.lines_read += 1
                _feed(result, converter, line, number, strict=strict)
                # Traces that look complete are mapped now, so spans are not all held.
                result.events.extend(event for _, event in converter.take_complete())
    result.events.extend(converter.finish())
    return result


def _feed(
    result: ReadResult, converter: OtlpConverter, data: bytes, number: int, *, strict: bool
) -> None:
    try:
        converter.feed_json(data)
    except (msgspec.MsgspecError, ValueError, TracekitError) as exc:
        text = data[:200].decode("utf-8", "replace").rstrip("\r\n")
        error = TraceReadError(result.path, number, text, f"not OTLP JSON: {exc}")
        if strict:
            raise error from None
        result.bad_lines.append(error)
