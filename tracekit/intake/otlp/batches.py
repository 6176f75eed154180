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

__all__ = ["Keep", "Records", "document_lines", "otlp_records"]

Refused = list[tuple[int, str, str]]
#: Per line, its spans still to be mapped here, as a document of them alone.
Keep = dict[int, bytes]
#: A chunk, the ``(line, record)`` pairs mapped with it, and the lines refused.
Records = tuple[Chunk, list[tuple[int, Event]], Refused]

# Documents without a span of a trace before the trace is mapped: spans of one
# trace are spread over several export batches (lines).
_IDLE = 64


#: Where records and refused lines go: the index of the source they were read from.
Routed = dict[int, tuple[list[tuple[int, Event]], Refused]]
_SHIFT = 40  # a line's key in the converter: its source above this bit, its number below


class OtlpJoin:
    """One converter across the OTLP sources of one ingest: a trace split over files is one run.

    Each source is read with its index (``origin``); every record and refused
    span comes back routed to the source its span was read from, with that
    source's line number, whichever source's reading completed its trace.

    Example:
        >>> join = OtlpJoin()
        >>> join.finish()
        {}
    """

    def __init__(self) -> None:
        self.converter = OtlpConverter()
        self._seen = SpanCounts()

    def records(
        self, chunks: Iterable[Chunk], origin: int, keep: Keep | None = None
    ) -> Iterator[tuple[Chunk, Routed]]:
        """Feed one source's chunks; yield each chunk with the records of traces now complete.

        ``keep``, if given, holds what of each line is this join's (the rest
        was mapped set-based), as a document of those spans; a line it does
        not name is still read, as one tick, so traces complete as they would
        otherwise.
        """
        base = origin << _SHIFT
        for chunk, lines in _lines(chunks):
            keyed = [(base + n, line) for n, line in lines]
            fed = (
                _feed(self.converter, keyed)
                if keep is None
                else _feed_kept(self, keyed, keep, base)
            )
            refused = [(n - base, raw, why) for n, raw, why in fed]
            routed = self._route(self.converter.take_complete(_IDLE))
            held = routed.setdefault(origin, ([], []))[1]
            held[:0] = [*refused, *chunk.refused()]
            yield chunk, routed

    def finish(self) -> Routed:
        """The records of every trace still held, routed to their sources."""
        return self._route(self.converter.finish_lines())

    def counts(self) -> SpanCounts:
        """Where the spans mapped since the last call went."""
        now = SpanCounts()
        now.add(self.converter.counts)
        now.add(self._seen, -1)
        self._seen.add(now)
        return now

    def _route(self, pairs: list[tuple[int, Event]]) -> Routed:
        routed: Routed = {}
        mask = (1 << _SHIFT) - 1
        for key, event in pairs:
            routed.setdefault(key >> _SHIFT, ([], []))[0].append((key & mask, event))
        for key, text, reason in self.converter.take_rejects():
            routed.setdefault(key >> _SHIFT, ([], []))[1].append((key & mask, text, reason))
        return routed


def otlp_records(chunks: Iterable[Chunk], spans: SpanCounts | None = None) -> Iterator[Records]:
    """Map one source's OTLP lines to records chunk by chunk; a document is read whole.

    Spans are collected across lines (:class:`OtlpConverter`) and a trace is
    mapped once it looks complete, so a parent and its children in different
    lines still nest; whatever is left is mapped at the end (with the last
    chunk). Spans the mapping refuses (a loop of parent links) are refused
    lines of the chunk they are mapped with. ``spans``, if given, is told at
    the end where every span went.
    """
    join = OtlpJoin()
    last: Chunk | None = None
    for chunk, routed in join.records(chunks, 0):
        yield chunk, *routed.get(0, ([], []))
        last = chunk
    if last is not None:
        yield last, *join.finish().get(0, ([], []))
    if spans is not None:
        spans.add(join.counts())


def document_lines(chunks: Iterable[Chunk]) -> Iterator[tuple[Chunk, list[tuple[int, bytes]]]]:
    """Each chunk with the lines the converter is fed (a multi-line document is one line)."""
    return _lines(chunks)


def _lines(chunks: Iterable[Chunk]) -> Iterator[tuple[Chunk, list[tuple[int, bytes]]]]:
    """Each chunk with its lines; a multi-line document is one chunk read as one line."""
    stream = iter(chunks)
    found, head = sniff(stream)
    if head and head[0].first_line == 1 and found.endswith("document"):
        document = [*head, *stream]
        data = b"".join(c.data for c in document)
        whole = Chunk(data, document[0].first_line, document[-1].end)
        whole.long = [n for c in document for n in c.long]
        whole.damage = document[-1].damage
        yield whole, [(whole.first_line, data)]
        return
    for chunk in itertools.chain(head, stream):
        yield chunk, _split(chunk)


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


def _feed_kept(join: OtlpJoin, lines: list[tuple[int, bytes]], keep: Keep, base: int) -> Refused:
    """Feed only the kept spans of each line; every line counts as one document."""
    converter = join.converter
    refused: Refused = []
    for number, line in lines:
        kept = keep.get(number - base)
        if not kept:
            converter.feed_spans([], line=number)
            continue
        try:  # refused as the whole line would be (a value nested too deep, say)
            converter.feed_json(kept, line=number)
        except (msgspec.DecodeError, ValueError, UnicodeDecodeError) as exc:
            raw = line.decode("utf-8", "replace").rstrip("\r")
            refused.append((number, raw, f"not OTLP JSON: {exc}"))
    return refused
