"""OTLP JSON sources: each line (or the one document) mapped to v1 records.

The mapping itself is the reader's (:func:`tracekit.intake.otlp.convert.otlp_to_events`);
here its records are encoded as v1 JSON lines and join the same set-based
load as a v1 file, numbered by the source line they came from and their
position in it (``item``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import IO, Any

import msgspec
import pyarrow as pa

from tracekit.events import MAX_LINE_BYTES, Event, encode_event
from tracekit.intake.lines import sniff
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.sources import Source, open_stream
from tracekit.store.sources import Chunk, read_chunks, text_table

__all__ = ["detect_format", "is_document", "otlp_batches"]

_PEEK = 1 << 16


def detect_format(source: Source) -> str:
    """Return ``"otlp"`` if the first record has ``resourceSpans``, else ``"tracekit"``.

    A JSON document over several lines that is not OTLP is ``"other"``: a
    file such as a saved tree, which an ingest skips rather than rejecting
    every line of it. A first line that is cut off or long is a line like any
    other (see :func:`~tracekit.intake.lines.classify`).
    """
    found = _sniff(source)
    if found == "document":
        return "other"
    return "otlp" if found.startswith("otlp") else "tracekit"


def _sniff(source: Source) -> str:
    # The first two lines tell the format: no more than that is read, even
    # when the first line is long or never ends (it is then seen by its head).
    with open_stream(source) as stream:
        budget = _Budget(stream, MAX_LINE_BYTES + 2 * _PEEK)
        chunks = read_chunks(budget, start=0, first_line=1, final=True, size=_PEEK)  # type: ignore[arg-type]
        return sniff(chunks)[0]


class _Budget:
    """A stream that ends after ``left`` bytes, read a peek at a time.

    The splitter asks for pieces of megabytes; two lines of a trace are
    usually in the first peek, and sniffing stops as soon as it has them.
    """

    def __init__(self, stream: IO[bytes], left: int) -> None:
        self.stream = stream
        self.left = left

    def read(self, size: int) -> bytes:
        data = self.stream.read(min(size, self.left, _PEEK))
        self.left -= len(data)
        return data


Batch = tuple[Chunk, pa.Table, list[tuple[int, str, str]]]
Refused = list[tuple[int, str, str]]

# Documents without a span of a trace before the trace is mapped: spans of one
# trace are spread over several export batches (lines).
_IDLE = 64


def is_document(source: Source) -> bool:
    """Whether the source is one JSON document over several lines (read whole)."""
    return _sniff(source) in ("otlp-document", "document")


def otlp_batches(chunks: Iterable[Chunk], spans: SpanCounts | None = None) -> Iterator[Batch]:
    """Map OTLP lines to batches of v1 lines; a multi-line document is read whole.

    Spans are collected across lines (:class:`~tracekit.intake.otlp.convert.OtlpConverter`)
    and a trace is mapped once it looks complete, so a parent and its children
    in different lines still nest; whatever is left is mapped at the end.
    Spans the mapping refuses (a loop of parent links) are refused lines of
    the batch they are mapped in. ``spans``, if given, is told at the end
    where every span went (:class:`~tracekit.intake.otlp.counts.SpanCounts`).
    """
    from tracekit.intake.otlp.convert import OtlpConverter

    converter = OtlpConverter()
    stream = iter(chunks)
    found, head = sniff(stream)
    chunks = itertools.chain(head, stream)
    if head and head[0].first_line == 1 and found.endswith("document"):
        yield _document(converter, list(chunks))
        if spans is not None:
            spans.add(converter.counts)
        return
    last: Chunk | None = None
    for chunk in chunks:
        refused = [*_feed(converter, _split(chunk)), *chunk.refused()]
        table = _table(converter.take_complete(_IDLE))
        yield chunk, table, [*refused, *converter.take_rejects()]
        last = chunk
    if last is not None:
        table = _table(converter.finish_lines())
        yield last, table, converter.take_rejects()
    if spans is not None:
        spans.add(converter.counts)


def _document(converter: Any, document: list[Chunk]) -> Batch:
    data = b"".join(c.data for c in document)
    whole = Chunk(data, document[0].first_line, document[-1].end)
    refused = _feed(converter, [(whole.first_line, data)])
    refused += [r for c in document for r in c.refused()]
    table = _table(converter.finish_lines())
    return whole, table, [*refused, *converter.take_rejects()]


def _split(chunk: Chunk) -> list[tuple[int, bytes]]:
    lines = chunk.data.split(b"\n")[:-1]
    return [(chunk.first_line + i, line) for i, line in enumerate(lines) if line.strip()]


def _feed(converter: Any, lines: list[tuple[int, bytes]]) -> Refused:
    refused: Refused = []
    for number, line in lines:
        try:
            converter.feed_json(line, line=number)
        except (msgspec.DecodeError, ValueError, UnicodeDecodeError) as exc:
            raw = line.decode("utf-8", "replace").rstrip("\r")
            refused.append((number, raw, f"not OTLP JSON: {exc}"))
    return refused


def _table(pairs: list[tuple[int, Event]]) -> pa.Table:
    numbers: list[int] = []
    items: list[int] = []
    texts: list[str] = []
    per_line: dict[int, int] = {}
    for number, event in pairs:
        item = per_line.get(number, 0)
        per_line[number] = item + 1
        numbers.append(number)
        items.append(item)
        texts.append(encode_event(event).decode())
    return text_table(numbers, items, texts, texts)
