"""OTLP JSON chunks read as spans, chunk by chunk: the driver from bytes to span rows.

:func:`span_batches` turns each chunk's lines into a table of the spans they
hold, as received (:mod:`tracekit.intake.otlp.received`), and the lines
refused, in the words ``tracekit tree`` gives. The store keeps the table as
it is; what the spans mean is derived from the stored spans
(:mod:`tracekit.intake.otlp.derivation`), so a trace split over lines,
chunks or files is one run.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import msgspec

from tracekit._util.gcpause import gc_paused
from tracekit.intake.lines import Chunk, sniff
from tracekit.intake.otlp.received import SpanRows

if TYPE_CHECKING:
    from tracekit.intake.otlp.derivation import SpanDeriver

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SpanBatch", "span_batches"]

Refused = list[tuple[int, str, str]]
#: A chunk, the table of the spans its accepted lines hold, and the lines refused.
SpanBatch = tuple[Chunk, "pa.Table", Refused]


def span_batches(
    chunks: Iterable[Chunk], deriver: SpanDeriver | None = None
) -> Iterator[SpanBatch]:
    """Each chunk's spans as received, and its bad lines.

    A line is refused whole, in the words :class:`OtlpConverter` gives, and a
    span past a limit at the door alone (the rest of its line kept); a
    multi-line JSON document is read whole, as one line. The spans kept are
    fed to ``deriver`` too, as they are decoded (once).
    """
    for chunk, lines in _lines(chunks):
        rows = SpanRows()
        refused: Refused = []
        # A chunk's spans and rows hold no cycles: the collector waits for its end.
        with gc_paused():
            for number, line in lines:
                try:
                    kept = rows.take_line(line, number)
                except (msgspec.DecodeError, ValueError, UnicodeDecodeError) as exc:
                    raw = line.decode("utf-8", "replace").rstrip("\r")
                    refused.append((number, raw, f"not OTLP JSON: {exc}"))
                    continue
                if deriver is not None:
                    deriver.add(kept, number)
            table = rows.table()
        yield chunk, table, [*refused, *rows.refused, *chunk.refused()]


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
