"""OTLP sources as Arrow batches: the store's adapter over the intake's records.

The intake maps OTLP to records (:func:`tracekit.intake.otlp.batches.otlp_records`:
the converter, complete traces, refused spans); here its records are encoded
as v1 JSON lines and join the same set-based load as a v1 file, numbered by
the source line they came from and their position in it (``item``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from tracekit.events import Event, encode_event
from tracekit.intake.otlp.batches import Keep, OtlpJoin, Routed, otlp_records
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.store.sources import Chunk, text_table

__all__ = ["Batch", "JoinedOtlp", "Tables", "otlp_batches"]

Refused = list[tuple[int, str, str]]
Batch = tuple[Chunk, pa.Table, Refused]
#: Per source read (its index in the ingest), the table of its records and its refused lines.
Tables = dict[int, tuple[pa.Table, Refused]]


class JoinedOtlp:
    """The OTLP sources of one ingest read through one intake join (:class:`OtlpJoin`).

    A trace whose spans are split over several files is one run; each record
    is stored under the source and line its span was read from.
    """

    def __init__(self) -> None:
        self.join = OtlpJoin()

    def batches(
        self, chunks: Iterable[Chunk], origin: int, keep: Keep | None = None
    ) -> Iterator[tuple[Chunk, Tables]]:
        """Each chunk of source ``origin`` with the tables of the traces it completed.

        ``keep``: only those traces of each line (the others are mapped set-based).
        """
        for chunk, routed in self.join.records(chunks, origin, keep):
            yield chunk, _tables(routed)

    def finish(self) -> Tables:
        """The tables of every trace still held."""
        return _tables(self.join.finish())

    def counts(self) -> SpanCounts:
        """Where the spans mapped since the last call went."""
        return self.join.counts()


def _tables(routed: Routed) -> Tables:
    return {origin: (_table(pairs), refused) for origin, (pairs, refused) in routed.items()}


def otlp_batches(chunks: Iterable[Chunk], spans: SpanCounts | None = None) -> Iterator[Batch]:
    """The intake's OTLP records of each chunk as a table of v1 lines.

    ``spans``, if given, is told at the end where every span went
    (:class:`~tracekit.intake.otlp.counts.SpanCounts`).
    """
    for chunk, pairs, refused in otlp_records(chunks, spans):
        yield chunk, _table(pairs), refused


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
