"""The v1 line reader: one JSON record per line.

Blocks of lines are decoded in one call (msgspec's ``decode_lines``); a block
holding a bad line is decoded again line by line, so that each bad line
becomes a :class:`TraceReadError` carrying the file, the line number and the
reason, and every good line around it is kept. A last line cut short by a
crashed writer is such a bad line.

Example:
    >>> result = read_jsonl_lines([b'{"type":"node","ts":1,"runId":"r","id":"a"}\\n', b'{"oops'], "t.jsonl")
    >>> len(result.events), [str(e) for e in result.bad_lines]
    (1, ['t.jsonl:2: truncated last line (not JSON: Input data was truncated)'])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import msgspec

from tracekit.errors import TraceReadError
from tracekit.events import Event, decode_event
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.validate import reject_reason

__all__ = ["ReadResult", "read_jsonl_blocks", "read_jsonl_lines"]

_BLOCK_DECODER: Final = msgspec.json.Decoder(Event)


@dataclass
class ReadResult:
    """What a reader got from one trace.

    Attributes:
        events: the records of every good line, in file order.
        bad_lines: one error per line that could not be read.
        lines_read: how many non-blank lines were seen, good or bad.
        path: the file the records came from (``-`` for standard input).
        format: ``"jsonl"`` or ``"otlp"``.
    """

    events: list[Event] = field(default_factory=list)
    bad_lines: list[TraceReadError] = field(default_factory=list)
    lines_read: int = 0
    path: str = "-"
    format: str = "jsonl"
    #: OTLP only: where every span read went (agents, steps, wrappers, rejected).
    spans: SpanCounts | None = None


def read_jsonl_blocks(blocks: Iterable[bytes], path: str, *, strict: bool = False) -> ReadResult:
    """Decode v1 records from blocks of whole lines (the fast path of :func:`read_trace`).

    A block is decoded in one call when every line of it is a good record;
    otherwise it is read line by line (:func:`read_jsonl_lines`).

    Raises:
        TraceReadError: with ``strict``, on the first bad line.
    """
    result = ReadResult(path=path, format="jsonl")
    line = 1
    for block in blocks:
        count = block.count(b"\n") + (not block.endswith(b"\n"))
        try:
            events = _BLOCK_DECODER.decode_lines(block)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            events = None
        # One record per line, no blank lines: otherwise count lines one by one.
        # decode_lines also ends a line at a lone \r, which no reader does.
        if events is not None and len(events) == count and not _lone_cr(block):
            result.events.extend(events)
            result.lines_read += count
        else:
            part = read_jsonl_lines(_lines(block), path, strict=strict, first_line=line)
            result.events.extend(part.events)
            result.bad_lines.extend(part.bad_lines)
            result.lines_read += part.lines_read
        line += count
    return result


def _lone_cr(block: bytes) -> bool:
    return b"\r" in block and block.count(b"\r") != block.count(b"\r\n")


def _lines(block: bytes) -> list[bytes]:
    """Split at ``\\n`` only, newlines kept (``bytes.splitlines`` also splits at ``\\r``)."""
    lines = [line + b"\n" for line in block.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def read_jsonl_lines(
    lines: Iterable[bytes], path: str, *, strict: bool = False, first_line: int = 1
) -> ReadResult:
    """Decode v1 records line by line; bad lines are collected, not fatal.

    Args:
        lines: the file's lines as bytes, newlines included or not.
        path: the name to report in errors.
        strict: raise the first bad line's :class:`TraceReadError` instead.
        first_line: the number of the first line in ``lines``.

    Raises:
        TraceReadError: with ``strict``, on the first bad line.
    """
    result = ReadResult(path=path, format="jsonl")
    append = result.events.append
    pending: tuple[int, bytes, Exception] | None = None
    for number, line in enumerate(lines, first_line):
        if pending is not None:
            _bad(result, pending, last=False, strict=strict)
            pending = None
        try:
            append(decode_event(line))
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            if line.strip():
                pending = (number, line, exc)
            else:
                result.lines_read -= 1  # a blank line is nothing, not a record
        result.lines_read += 1
    if pending is not None:
        _bad(result, pending, last=not pending[1].endswith(b"\n"), strict=strict)
    return result


def _reason(exc: Exception, *, last: bool) -> str:
    if last and isinstance(exc, msgspec.DecodeError) and "truncated" in str(exc):
        return f"truncated last line (not JSON: {exc})"
    return reject_reason(exc)  # the words ingest gives the same line


def _bad(
    result: ReadResult, pending: tuple[int, bytes, Exception], *, last: bool, strict: bool
) -> None:
    number, line, exc = pending
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    error = TraceReadError(result.path, number, text, _reason(exc, last=last))
    if strict:
        raise error
    result.bad_lines.append(error)
