"""How an ingest reads its sources (opened by :mod:`tracekit.intake.sources`): line-aligned chunks.

A chunk is whole lines only; its lines become an Arrow table (``line``,
``item``, ``text``, ``raw``) without one Python object per line: the newline
offsets are found with numpy and the text column is built over the chunk's
own bytes, so DuckDB scans it in place.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa

from tracekit._util.arrow import ints, strings
from tracekit.intake.lines import Chunk, guarded, split_lines

# Opening is intake's (one opener for tree, ingest and serve); re-exported for the store's callers.
from tracekit.intake.sources import Source, expand, open_stream

__all__ = [
    "Chunk",
    "Source",
    "chunk_table",
    "expand",
    "fingerprint",
    "ints",
    "lines_table",
    "open_stream",
    "read_chunks",
    "strings",
    "text_table",
]

CHUNK_BYTES = 64 << 20
# DuckDB scans an Arrow table one record batch per thread: a chunk cut into
# batches is parsed on every core, not on one. A batch of one row group
# (122,880 rows, DuckDB's size) is stored as whole row groups, which the
# checkpoint keeps as written; smaller batches leave partial row groups that
# the checkpoint merges and rewrites (2 s of a 9 s ingest of 1M events).
BATCH_ROWS = 122_880
_SAMPLE = 64 << 10
_PIECE = 4 << 20
# A gzip read that reaches a cut loses what it inflated: small reads lose little.
_GZIP_PIECE = 64 << 10
_SLICE = 1 << 20


def fingerprint(path: Path, end: int) -> str:
    """Return a cheap identity of the bytes ``[0, end)`` of a file.

    sha256 of the first and last 64 KiB and the length: enough to tell the
    same file grown from a file replaced or rewritten, without re-reading
    gigabytes on each ingest of a live file.
    """
    digest = hashlib.sha256(str(end).encode())
    with path.open("rb") as fh:
        digest.update(fh.read(min(end, _SAMPLE)))
        if end > _SAMPLE:
            fh.seek(max(_SAMPLE, end - _SAMPLE))
            digest.update(fh.read(end - fh.tell()))
    return digest.hexdigest()


def read_chunks(
    stream: IO[bytes], *, start: int, first_line: int, final: bool, size: int = CHUNK_BYTES
) -> Iterator[Chunk]:
    """Yield chunks of whole lines from ``start`` (see :func:`~tracekit.intake.lines.split_lines`).

    The bytes after the last newline are a line still being written: they are
    held back unless ``final`` (stdin, gzip) or they already form a complete
    JSON value, so a live file is read again from there next time. A damaged
    gzip stream ends with the lines before the damage.
    """
    if start:
        stream.seek(start)
    gz = isinstance(stream, gzip.GzipFile)
    return split_lines(
        guarded(stream.read),
        piece=_GZIP_PIECE if gz else _PIECE,
        chunk=size,
        keep_tail=lambda tail: final or (bool(tail) and _complete(tail)),
        first_line=first_line,
        offset=start,
    )


def _complete(tail: bytes) -> bool:
    import msgspec

    try:
        msgspec.json.decode(tail)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return False
    return True


Refused = list[tuple[int, str, str]]


def chunk_table(chunk: Chunk) -> tuple[pa.Table, Refused]:
    """Build the Arrow table of a chunk's lines; its over-long lines and damage are refused."""
    table, refused = lines_table(chunk.data, chunk.first_line)
    return table, [*refused, *chunk.refused()]


def lines_table(data: bytes, first_line: int) -> tuple[pa.Table, Refused]:
    """Build the Arrow table of a chunk's lines, newlines dropped, numbered.

    Lines that are not UTF-8 are left out of the table and returned as
    ``(line, text, reason)`` to be rejected.
    """
    try:
        if not data.isascii():  # ASCII is UTF-8: no 64 MiB string made to check it
            data.decode("utf-8")
    except UnicodeDecodeError:
        return _lines_table_slow(data, first_line)
    return _lines_table(data, first_line), []


def _lines_table_slow(data: bytes, first_line: int) -> tuple[pa.Table, Refused]:
    refused: Refused = []
    numbers: list[int] = []
    texts: list[str] = []
    for number, line in enumerate(data.split(b"\n")[:-1], first_line):
        try:
            texts.append(line.decode("utf-8"))
            numbers.append(number)
        except UnicodeDecodeError as exc:
            text = line.decode("utf-8", "replace").rstrip("\r")
            refused.append((number, text, f"not JSON: not UTF-8 ({exc.reason})"))
    return text_table(numbers, [0] * len(numbers), texts, texts), refused


def text_table(numbers: list[int], items: list[int], texts: list[str], raws: list[str]) -> pa.Table:
    """Build a batch table from Python lists (the slow paths: OTLP, odd bytes, a sink)."""
    text = strings(texts)
    raw = text if raws is texts else strings(raws)
    keys = ints(np.full(len(texts), -1, dtype=np.int32), np.int32)  # not counted: not plain
    return _split(_table(ints(numbers, np.int64), ints(items, np.int32), text, raw, keys))


def _table(*columns: pa.Array) -> pa.Table:
    return pa.Table.from_arrays(list(columns), names=["line", "item", "text", "raw", "keys"])


def _split(table: pa.Table) -> pa.Table:
    """The same rows as several record batches, so that DuckDB parses them in parallel."""
    return pa.Table.from_batches(table.to_batches(max_chunksize=BATCH_ROWS), table.schema)


def _lines_table(data: bytes, first_line: int) -> pa.Table:
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    count = len(newlines)
    # Drop the newline bytes so that each value is exactly its line.
    text_bytes = np.frombuffer(data.replace(b"\n", b""), dtype=np.uint8)
    offsets = np.empty(count + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:] = newlines - np.arange(count, dtype=np.int64)
    text = pa.Array.from_buffers(
        pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(text_bytes)]
    )
    lines = ints(np.arange(first_line, first_line + count, dtype=np.int64), np.int64)
    items = ints(np.zeros(count, dtype=np.int32), np.int32)
    keys = ints(_plain_keys(buf, newlines), np.int32)
    table = _split(_table(lines, items, text, text, keys))
    # Empty lines are not records; whitespace-only ones are left to the SQL count.
    filled = count - int(np.count_nonzero(np.diff(offsets) == 0))
    return table.replace_schema_metadata({b"filled": str(filled).encode()})


def _plain_keys(buf: np.ndarray, newlines: np.ndarray) -> np.ndarray:
    """Each line's count of ``":`` if it is plain, else -1 (see :mod:`tracekit.store.record_sql`).

    A plain line has no white space (so a ``:`` follows each key's closing
    quote at once) and no comma before a closing bracket (a trailing comma,
    which DuckDB's JSON reader takes and msgspec does not). The chunk is
    counted a slice at a time with numpy, never a line at a time.
    """
    keys = np.zeros(len(newlines), dtype=np.int32)
    odd: list[np.ndarray] = []
    # Slices of the chunk, not the whole: temporaries this small are reused,
    # where one of the chunk's size is fresh memory, faulted in page by page
    # (three times the cost of the counting itself).
    for start in range(0, len(buf), _SLICE):
        part = buf[start : start + _SLICE + 1]  # one byte more: a pair may cross
        key_end = part[:-1] == 34
        key_end &= part[1:] == 58
        bad = part[:-1] <= 32
        bad &= part[:-1] != 10  # a line's own newline is not white space in it
        comma = part[:-1] == 44
        comma &= (part[1:] == 125) | (part[1:] == 93)
        bad |= comma
        if len(part) <= _SLICE:  # the last slice: its last byte has no pair
            tail = part[-1:]
            bad = np.append(bad, (tail <= 32) & (tail != 10))
            key_end = np.append(key_end, False)
        lines = np.searchsorted(newlines, np.flatnonzero(key_end) + start)
        if len(lines):
            first = lines[0]
            counted = np.bincount(lines - first)
            keys[first : first + len(counted)] += counted.astype(np.int32)
        odd.append(np.searchsorted(newlines, np.flatnonzero(bad) + start))
    keys[np.concatenate(odd)] = -1
    return keys
