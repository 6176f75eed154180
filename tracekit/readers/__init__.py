"""Read a trace file into v1 records, whatever it was written as.

:func:`read_trace` opens a path, ``-`` (standard input) or a gzip file (found
by its magic bytes, not its name), tells v1 JSON lines from OTLP JSON by
content (a first object with ``resourceSpans`` is OTLP) and returns a
:class:`ReadResult`: the good records, the bad lines, and how many lines were
read. A bad line never loses the good ones beside it.

Example:
    >>> result = read_trace("sample_traces/agent_orchestrator.jsonl")  # doctest: +SKIP
    >>> len(result.events), result.bad_lines
    (9, [])
"""

from __future__ import annotations

import gzip
import itertools
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from typing import IO, Literal

import msgspec

from tracekit.errors import TraceFileError, TracekitError, TraceReadError
from tracekit.readers.jsonl import ReadResult, read_jsonl_lines
from tracekit.readers.otlp import OtlpConverter

__all__ = ["ReadResult", "read_trace"]

Format = Literal["auto", "jsonl", "otlp"]
_GZIP_MAGIC = b"\x1f\x8b"


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
    with _open(path) as stream:
        lines = _lines(stream, path, damage)
        first, lines = _first_lines(lines)
        chosen = format if format != "auto" else _detect(first)
        if chosen == "otlp":
            result = _read_otlp(first, lines, path, strict=strict)
        else:
            result = read_jsonl_lines(itertools.chain(first, lines), path, strict=strict)
    if damage:  # the lines before the damage are kept; the rest is one bad line
        error = TraceReadError(path, result.lines_read + 1, "", damage[0])
        if strict:
            raise error
        result.bad_lines.append(error)
    return result


class _Source:
    """A context manager over a binary stream that closes only what it opened."""

    def __init__(self, stream: IO[bytes], owned: bool, raw: IO[bytes] | None = None) -> None:
        self.stream = stream
        self.owned = owned
        self.raw = raw  # the file under a gzip stream: closing GzipFile leaves it open

    def __enter__(self) -> IO[bytes]:
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.raw is not None:
            self.stream.close()
        if self.owned:
            (self.raw or self.stream).close()


def _open(path: str) -> _Source:
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        owned = False
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
        owned = True
    if head == _GZIP_MAGIC:
        return _Source(gzip.GzipFile(fileobj=raw, mode="rb"), owned, raw)  # type: ignore[arg-type]
    return _Source(raw, owned)


def _lines(stream: IO[bytes], path: str, damage: list[str]) -> Iterator[bytes]:
    """Iterate lines; a damaged gzip stream ends the file and is noted in ``damage``."""
    if not isinstance(stream, gzip.GzipFile):
        try:
            yield from stream
        except OSError as exc:
            raise TraceFileError(path, f"cannot read ({exc.strerror or exc})") from None
        return
    try:
        yield from stream
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        # A crashed writer leaves a cut-off gzip stream: keep what came before.
        damage.append(f"gzip stream damaged ({exc or 'it ends early'})")


def _first_lines(lines: Iterator[bytes]) -> tuple[list[bytes], Iterator[bytes]]:
    """Take lines up to the first non-blank one (a few more if it opens a document)."""
    first: list[bytes] = []
    for line in lines:
        first.append(line)
        if line.strip():
            break
    if _opens_document(first):
        first.extend(itertools.islice(lines, 50))
    return first, lines


def _opens_document(first: list[bytes]) -> bool:
    """A first line of just ``{`` or ``[`` starts a pretty-printed JSON document."""
    head = next((line.strip() for line in first if line.strip()), b"")
    return head in (b"{", b"[")


def _detect(first: list[bytes]) -> str:
    """A first object with ``resourceSpans`` is OTLP; anything else is v1."""
    return "otlp" if any(b'"resourceSpans"' in line for line in first) else "jsonl"


def _read_otlp(first: list[bytes], rest: Iterable[bytes], path: str, *, strict: bool) -> ReadResult:
    """Read OTLP JSON: one ``TracesData`` object per line, or one whole document.

    A trace's spans may be spread over many lines, so every line is fed to
    one converter and the records are made once all lines are in.
    """
    converter = OtlpConverter()
    result = ReadResult(path=path, format="otlp")
    if _opens_document(first):  # one pretty-printed document over many lines
        body = b"".join(itertools.chain(first, rest))
        _feed(result, converter, body, 1, strict=strict)
        result.lines_read = body.count(b"\n") + (not body.endswith(b"\n"))
    else:
        for number, line in enumerate(itertools.chain(first, rest), 1):
            if line.strip():
                result.lines_read += 1
                _feed(result, converter, line, number, strict=strict)
    result.events.extend(converter.finish())
    return result


def _feed(
    result: ReadResult, converter: OtlpConverter, data: bytes, number: int, *, strict: bool
) -> None:
    try:
        doc = msgspec.json.decode(data)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        converter.feed(doc)
    except (msgspec.MsgspecError, ValueError, TracekitError) as exc:
        text = data[:200].decode("utf-8", "replace").rstrip("\r\n")
        error = TraceReadError(result.path, number, text, f"not OTLP JSON: {exc}")
        if strict:
            raise error from None
        result.bad_lines.append(error)
