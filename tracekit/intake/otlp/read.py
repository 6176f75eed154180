"""OTLP JSON lines (or one document) read whole into a :class:`ReadResult`.

The decode of the ``otlp`` entry of :mod:`tracekit.intake.formats` for
``tracekit tree``: every line is fed to one converter, a trace's records are
made once it looks complete (its root span ended, then 64 lines without it),
the rest at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from tracekit._util.gcpause import gc_paused
from tracekit.errors import TracekitError, TraceReadError
from tracekit.intake.jsonl import ReadResult
from tracekit.intake.otlp.convert import OtlpConverter

__all__ = ["read_otlp"]


def read_otlp(blocks: Iterable[bytes], path: str, *, strict: bool, document: bool) -> ReadResult:
    """Read OTLP JSON from blocks of whole lines: a ``TracesData`` a line, or one document.

    A trace's spans may be spread over many lines, so every line is fed to
    one converter.
    """
    with gc_paused():  # millions of acyclic spans: collections would only walk them
        return _read_lines(_split(blocks), path, strict=strict, document=document)


def _split(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """Lines of blocks of whole lines, newlines kept: split at ``\\n`` only."""
    for block in blocks:
        start = 0
        while (end := block.find(b"\n", start)) >= 0:
            yield block[start : end + 1]
            start = end + 1


def _read_lines(lines: Iterator[bytes], path: str, *, strict: bool, document: bool) -> ReadResult:
    converter = OtlpConverter()
    result = ReadResult(path=path, format="otlp")
    if document:
        body = b"".join(lines)
        _feed(result, converter, body, 1, strict=strict)
        result.lines_read = body.count(b"\n") + (not body.endswith(b"\n"))
    else:
        for number, line in enumerate(lines, 1):
            if line.strip():
                result.lines_read += 1
                _feed(result, converter, line, number, strict=strict)
                # Traces that look complete are mapped now, so spans are not all held.
                result.events.extend([event for _, event in converter.take_complete()])
    result.events.extend(converter.finish())
    result.spans = converter.counts
    _refused_spans(result, converter, strict=strict)
    return result


def _refused_spans(result: ReadResult, converter: OtlpConverter, *, strict: bool) -> None:
    """The spans the mapping refused (a loop of parent links), as bad lines in line order."""
    for number, text, reason in converter.take_rejects():
        error = TraceReadError(result.path, number, text, reason)
        if strict:
            raise error
        result.bad_lines.append(error)
    result.bad_lines.sort(key=lambda error: error.line)


def _feed(
    result: ReadResult, converter: OtlpConverter, data: bytes, number: int, *, strict: bool
) -> None:
    try:
        converter.feed_json(data, line=number)
    except (msgspec.MsgspecError, ValueError, TracekitError) as exc:
        text = data[:200].decode("utf-8", "replace").rstrip("\r\n")
        error = TraceReadError(result.path, number, text, f"not OTLP JSON: {exc}")
        if strict:
            raise error from None
        result.bad_lines.append(error)
