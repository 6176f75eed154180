"""OTLP JSON sources: each line (or the one document) mapped to v1 records.

The mapping itself is the reader's (:func:`tracekit.readers.otlp.otlp_to_events`);
here its records are encoded as v1 JSON lines and join the same set-based
load as a v1 file, numbered by the source line they came from and their
position in it (``item``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec
import pyarrow as pa

from tracekit.events import encode_event
from tracekit.store.sources import Chunk, Source, open_stream, text_table

__all__ = ["detect_format", "otlp_batches"]

_PEEK = 1 << 16


def detect_format(source: Source) -> str:
    """Return ``"otlp"`` if the first record has ``resourceSpans``, else ``"tracekit"``.

    A JSON document over several lines that is not OTLP is ``"other"``: a
    file such as a saved tree, which an ingest skips rather than rejecting
    every line of it.
    """
    with open_stream(source) as stream:
        head = stream.read(_PEEK)
    first = head.lstrip()[:1]
    if first != b"{":
        return "tracekit"
    line = head.lstrip().split(b"\n", 1)[0]
    try:
        obj = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return "otlp" if b'"resourceSpans"' in head else "other"
    return "otlp" if isinstance(obj, dict) and "resourceSpans" in obj else "tracekit"


Batch = tuple[Chunk, pa.Table, list[tuple[int, str, str]]]


def otlp_batches(chunks: Iterable[Chunk]) -> Iterator[Batch]:
    """Map OTLP lines to batches of v1 lines; a multi-line document is read whole."""
    pending: list[Chunk] = []
    for chunk in chunks:
        first = chunk.data.lstrip()[:1]
        if pending or (chunk.first_line == 1 and first == b"{" and not _first_line_is_json(chunk)):
            pending.append(chunk)
            continue
        yield (chunk, *_table(_split(chunk)))
    if pending:
        data = b"".join(c.data for c in pending)
        last = Chunk(data, pending[0].first_line, pending[-1].end)
        yield (last, *_table([(pending[0].first_line, data)]))


def _first_line_is_json(chunk: Chunk) -> bool:
    try:
        msgspec.json.decode(chunk.data.split(b"\n", 1)[0])
    except msgspec.DecodeError:
        return False
    return True


def _split(chunk: Chunk) -> list[tuple[int, bytes]]:
    lines = chunk.data.split(b"\n")[:-1]
    return [(chunk.first_line + i, line) for i, line in enumerate(lines) if line.strip()]


def _table(lines: list[tuple[int, bytes]]) -> tuple[pa.Table, list[tuple[int, str, str]]]:
    from tracekit.readers.otlp import otlp_to_events

    refused: list[tuple[int, str, str]] = []
    numbers: list[int] = []
    items: list[int] = []
    texts: list[str] = []
    raws: list[str] = []
    for number, line in lines:
        raw = line.decode("utf-8", "replace").rstrip("\r")
        try:
            doc = msgspec.json.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            refused.append((number, raw, f"not OTLP JSON: {exc}"))
            continue
        if not isinstance(doc, dict) or "resourceSpans" not in doc:
            refused.append((number, raw, "not OTLP JSON: no resourceSpans"))
            continue
        try:
            events = otlp_to_events(doc)
        except (ValueError, TypeError, KeyError, msgspec.MsgspecError) as exc:
            refused.append((number, raw, f"not OTLP JSON: {exc}"))
            continue
        for item, event in enumerate(events):
            text = encode_event(event).decode()
            numbers.append(number)
            items.append(item)
            texts.append(text)
            raws.append(text)
    return text_table(numbers, items, texts, raws), refused
