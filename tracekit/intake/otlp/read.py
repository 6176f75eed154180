"""OTLP JSON lines (or one document) read whole into a :class:`ReadResult`: ``tracekit tree``'s driver.

The decode of the ``otlp`` entry of :mod:`tracekit.intake.formats`: each
line's spans go to the processor an ingest derives with
(:class:`~tracekit.intake.otlp.derivation.SpanDeriver`, here without a
store: a late span reopens its trace), a trace's records are made once it
settles (its root span ended, then 64 lines without it), the rest at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from tracekit._util.gcpause import gc_paused
from tracekit.errors import TracekitError, TraceReadError
from tracekit.intake.jsonl import ReadResult
from tracekit.intake.otlp.convert import json_spans
from tracekit.intake.otlp.derivation import Derived, SpanDeriver

__all__ = ["read_otlp"]


def read_otlp(blocks: Iterable[bytes], path: str, *, strict: bool, document: bool) -> ReadResult:
    """Read OTLP JSON from blocks of whole lines: a ``TracesData`` a line, or one document.

    A trace's spans may be spread over many lines: every line goes to one
    deriver.
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
    deriver = SpanDeriver(reopen=True)
    result = ReadResult(path=path, format="otlp")
    refused: list[TraceReadError] = []
    if document:
        body = b"".join(lines)
        _add(result, deriver, body, 1, strict=strict)
        result.lines_read = body.count(b"\n") + (not body.endswith(b"\n"))
    else:
        for number, line in enumerate(lines, 1):
            if line.strip():
                result.lines_read += 1
                if _add(result, deriver, line, number, strict=strict):
                    refused += _take(result, deriver.ready())
    refused += _take(result, deriver.finish())
    result.spans = deriver.counts
    if strict and refused:  # once every line is read, as a bad line would have been
        raise refused[0]
    result.bad_lines += refused
    result.bad_lines.sort(key=lambda error: error.line)
    return result


def _take(result: ReadResult, derived: Derived) -> list[TraceReadError]:
    """A batch's records; the spans the mapping refused (a loop of parent links) as bad lines."""
    result.events.extend([event for _, _, event in derived.records])
    return [
        TraceReadError(result.path, number, text, reason)
        for _, number, text, reason, _ in derived.refused
    ]


def _add(
    result: ReadResult, deriver: SpanDeriver, data: bytes, number: int, *, strict: bool
) -> bool:
    """One line's spans to the deriver; a line that is not OTLP JSON is a bad line."""
    try:
        spans = json_spans(data)
    except (msgspec.MsgspecError, ValueError, TracekitError) as exc:
        text = data[:200].decode("utf-8", "replace").rstrip("\r\n")
        error = TraceReadError(result.path, number, text, f"not OTLP JSON: {exc}")
        if strict:
            raise error from None
        result.bad_lines.append(error)
        return False
    deriver.add(spans, number)
    return True
