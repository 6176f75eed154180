"""OTLP JSON chunks mapped to records, chunk by chunk: the store's OTLP intake.

:func:`otlp_records` feeds each chunk's lines to one converter and yields, per
chunk, the records of the traces that look complete, numbered by the source
line they came from, with the lines refused. The store turns them into its own
tables (``store/otlp_source.py``); no OTLP logic lives there.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import msgspec

from tracekit.events import Event
from tracekit.intake.lines import Chunk, sniff
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.counts import SpanCounts

__all__ = ["Records", "otlp_records"]

Refused = list[tuple[int, str, str]]
#: A chunk, the ``(line, record)`` pairs mapped with it, and the lines refused.
Records = tuple[Chunk, list[tuple[int, Event]], Refused]

# Documents without a span of a trace before the trace is mapped: spans of one
# trace are spread over several export batches (lines).
_IDLE = 64


def otlp_records(chunks: Iterable[Chunk], spans: SpanCounts | None = None) -> Iterator[Records]:
    """Map OTLP lines to records chunk by chunk; a multi-line document is read whole.

    Spans are collected across lines (:class:`OtlpConverter`) and a trace is
    mapped once it looks complete, so a parent and its children in different
    lines still nest; whatever is left is mapped at the end. Spans the mapping
    refuses (a loop of parent links) are refused lines of the chunk they are
    mapped with. ``spans``, if given, is told at the end where every span went.
    """
    converter = OtlpConverter()
    stream = iter(chunks)
    found, head = sniff(stream)
    chunks = itertools.chain(head, stream)
    if head and head[0].first_line == 1 and found.endswith("document"):
        yield _document(converter, list(chunks))
    else:
        yield from _lines(converter, chunks)
    if spans is not None:
        spans.add(converter.counts)


def _lines(converter: OtlpConverter, chunks: Iterable[Chunk]) -> Iterator[Records]:
    last: Chunk | None = None
    for chunk in chunks:
        refused = [*_feed(converter, _split(chunk)), *chunk.refused()]
        pairs = converter.take_complete(_IDLE)
        yield chunk, pairs, [*refused, *converter.take_rejects()]
        last = chunk
    if last is not None:
        yield last, converter.finish_lines(), converter.take_rejects()


def _document(converter: OtlpConverter, document: list[Chunk]) -> Records:
    data = b"".join(c.data for c in document)
    whole = Chunk(data, document[0].first_line, document[-1].end)
    refused = _feed(converter, [(whole.first_line, data)])
    refused += [r for c in document for r in c.refused()]
    pairs = converter.finish_lines()
    return whole, pairs, [*refused, *converter.take_rejects()]


def _split(chunk: Chunk) -> list[tuple[int, bytes]]:
    lines = chunk.data.split(b"\n")[:-1]
    return [(chunk.first_line + i, line) for i, line in enumerate(lines) if line.strip()]


def _feed(converter: OtlpConverter, lines: list[tuple[int, bytes]]) -> Refused:
    refused: Refused = []
    for number, line in lines:
        try:
            converter.feed_json(line, line=number)
        except (msgspec.DecodeError, ValueError, UnicodeDecodeError) as exc:
            raw = line.decode("utf-8", "replace").rstrip("\r")
            refused.append((number, raw, f"not OTLP JSON: {exc}"))
    return refused
