"""The v1 line reader: one JSON record per line, each decoded on its own.

A line that is not a v1 record is a :class:`TraceReadError` carrying the file,
the line number and the reason; every good line around it is kept. A last line
cut short by a crashed writer is such a bad line.

Example:
    >>> result = read_jsonl_lines([b'{"type":"node","ts":1,"runId":"r","id":"a"}\\n', b"{oops"], "t.jsonl")
    >>> len(result.events), [str(e) for e in result.bad_lines]
    (1, ['t.jsonl:2: truncated last line (not JSON: Input data was truncated)'])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from tracekit.errors import TraceReadError
from tracekit.events import Event, decode_event

__all__ = ["ReadResult", "read_jsonl_lines"]


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


def _reason(exc: msgspec.MsgspecError, *, last: bool) -> str:
    if isinstance(exc, msgspec.ValidationError):
        return f"not a v1 record: {exc}"
    if last and "truncated" in str(exc):
        return f"truncated last line (not JSON: {exc})"
    return f"not JSON: {exc}"


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\r\n")


def read_jsonl_lines(
    lines: Iterable[bytes], path: str, *, strict: bool = False, first_line: int = 1
) -> ReadResult:
    """Decode v1 records from raw lines; bad lines are collected, not fatal.

    Args:
        lines: the file's lines as bytes, newlines included or not.
        path: the name to report in errors.
        strict: raise the first bad line's :class:`TraceReadError` instead.
        first_line: the number of the first line in ``lines``.

    Raises:
        TraceReadError: with ``strict``, on the first bad line.
    """
    result = ReadResult(path=path, format="jsonl")
    events = result.events
    append = events.append
    pending: tuple[int, bytes, msgspec.MsgspecError] | None = None
    number = first_line - 1
    for number, line in enumerate(lines, first_line):
        if pending is not None:
            _bad(result, pending, last=False, strict=strict)
            pending = None
        try:
            append(decode_event(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if line.strip():
                pending = (number, line, exc)
                continue
            result.lines_read -= 1  # a blank line is nothing, not a record
        except UnicodeDecodeError as exc:
            pending = (number, line, msgspec.DecodeError(f"not UTF-8 ({exc.reason})"))
    result.lines_read += number - first_line + 1
    if pending is not None:
        _bad(result, pending, last=not pending[1].endswith(b"\n"), strict=strict)
    return result


def _bad(
    result: ReadResult,
    pending: tuple[int, bytes, msgspec.MsgspecError],
    *,
    last: bool,
    strict: bool,
) -> None:
    number, line, exc = pending
    error = TraceReadError(result.path, number, _text(line), _reason(exc, last=last))
    if strict:
        raise error
    result.bad_lines.append(error)
