"""Splitting a byte stream into lines: one rule for every reader.

A line ends at ``\\n``; a ``\\r`` just before it belongs to no record (JSON
takes it as white space), and a lone ``\\r`` does not end a line. A UTF-8 BOM
at the very start of a stream is dropped. A line longer than
:data:`~tracekit.events.MAX_LINE_BYTES` is never held whole: once it passes
the limit its bytes are counted and dropped until its newline, and it stays
in the chunk as an empty line (so that every later line keeps its number)
with a :class:`LongLine` saying where it was and how long.

The stream is read in pieces (a gzip stream small ones, so that a cut-off
stream loses little) and the pieces are joined once per chunk, so time is
linear in the input whatever its lines look like.

Example:
    >>> import io
    >>> stream = io.BytesIO(b'\\xef\\xbb\\xbf{"a":1}\\r\\n' + b"x" * 40 + b"\\n{}")
    >>> [(c.data, [(n.number, n.size) for n in c.long]) for c in
    ...  split_lines(stream.read, piece=8, chunk=64, limit=32, keep_tail=lambda _: True)]
    [(b'{"a":1}\\r\\n\\n', [(2, 40)]), (b'{}\\n', [])]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from tracekit.events import MAX_LINE_BYTES

__all__ = [
    "BOM",
    "Chunk",
    "LongLine",
    "StreamDamaged",
    "classify",
    "guarded",
    "sniff",
    "split_lines",
]

BOM = b"\xef\xbb\xbf"
_HEAD = 1 << 16  # how much of an over-long line is kept to show, and to sniff a format


@dataclass
class LongLine:
    """A line over the limit: its number, its first bytes and its length."""

    number: int
    head: bytes
    size: int

    @property
    def reason(self) -> str:
        """Why it was refused, in the words every reader uses."""
        return f"line too long ({self.size:,} bytes; the limit is {MAX_LINE_BYTES >> 20} MiB)"


@dataclass
class Chunk:
    """Whole lines read from a stream; ``end`` is the input offset after them.

    ``data`` ends with a newline (``unended``: the stream's last line had
    none, one was added); an over-long line is an empty line in it, listed in
    ``long``. ``damage`` says why the stream ended early, if it did.
    """

    data: bytes
    first_line: int
    end: int
    long: list[LongLine] = field(default_factory=list)
    damage: str = ""
    unended: bool = False

    @property
    def last_line(self) -> int:
        """The number of the line after this chunk's last one."""
        return self.first_line + self.data.count(b"\n")

    def refused(self, width: int = 1000) -> list[tuple[int, str, str]]:
        """The lines this chunk could not hold, as ``(line, text, reason)``."""
        out = [(n.number, _text(n.head[:width]), n.reason) for n in self.long]
        if self.damage:
            out.append((self.last_line, "", self.damage))
        return out


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").rstrip("\r\n")


class _Splitter:
    """The state of one pass: complete lines waiting, and the line being read."""

    def __init__(self, first_line: int, offset: int, limit: int) -> None:
        self.done: list[bytes | memoryview] = []
        self.done_size = 0
        self.partial: list[bytes | memoryview] = []
        self.partial_size = 0
        self.long: LongLine | None = None  # the over-long line being skipped
        self.found: list[LongLine] = []
        self.line = first_line  # number of the line being read
        self.first_line = first_line
        self.read = offset  # input offset after every byte fed
        self.tail = 0  # bytes of the line being read, kept or skipped
        self.limit = limit

    def feed(self, piece: bytes) -> None:
        view = memoryview(piece)
        self.read += len(piece)
        cut = piece.find(b"\n")
        if cut < 0:
            self._grow(view)
            return
        self._grow(view[:cut])
        self._end_line()
        last = piece.rfind(b"\n")
        if last > cut:  # whole lines inside one piece are short: a piece is within the limit
            self.done.append(view[cut + 1 : last + 1])
            self.done_size += last - cut
            self.line += piece.count(b"\n", cut + 1, last + 1)
        self._grow(view[last + 1 :])

    def _grow(self, view: memoryview) -> None:
        self.tail += len(view)
        if self.long is not None:
            self.long.size += len(view)
        elif len(view):
            self.partial.append(view)
            self.partial_size += len(view)
            if self.partial_size > self.limit:
                head = b"".join(self.partial)[:_HEAD]
                self.long = LongLine(self.line, head, self.partial_size)
                self.partial, self.partial_size = [], 0

    def _end_line(self) -> None:
        if self.long is not None:
            self.found.append(self.long)
            self.long = None
        else:
            self.done.extend(self.partial)
            self.done_size += self.partial_size
        self.done.append(b"\n")
        self.done_size += 1
        self.partial, self.partial_size, self.tail = [], 0, 0
        self.line += 1

    def take(self) -> Chunk:
        """The complete lines so far, as a chunk."""
        end = self.read - self.tail
        chunk = Chunk(b"".join(self.done), self.first_line, end, self.found)
        self.done, self.done_size, self.found = [], 0, []
        self.first_line = self.line
        return chunk

    def finish(self, keep_tail: Callable[[bytes], bool], damage: str) -> Chunk | None:
        """The last chunk at the end of the stream, or None if there is nothing left.

        A last line without a newline is kept if ``keep_tail`` says so (else it
        is left for a later read); an over-long one only if the stream is damaged
        or final, which ``keep_tail(b"")`` tells.
        """
        unended = False
        if self.long is not None and (damage or keep_tail(b"")):
            self._end_line()
        elif self.partial_size and not damage and keep_tail(b"".join(self.partial)):
            self._end_line()
            unended = True
        if not self.done and not self.found and not damage:
            return None
        chunk = self.take()
        chunk.damage, chunk.unended = damage, unended
        return chunk


def split_lines(
    read: Callable[[int], bytes],
    *,
    piece: int,
    chunk: int,
    keep_tail: Callable[[bytes], bool],
    first_line: int = 1,
    offset: int = 0,
    limit: int = MAX_LINE_BYTES,
) -> Iterator[Chunk]:
    """Yield chunks of whole lines of about ``chunk`` bytes from ``read``.

    Args:
        read: reads up to n bytes (``b""`` at the end); it may raise
            :class:`StreamDamaged`, which ends the stream: the last chunk
            carries the reason as ``damage``.
        piece: bytes per read (at most ``limit``, so that a line within one
            piece is within the limit).
        chunk: about how many bytes a chunk holds; a chunk also ends after an
            over-long line, so that lines are reported in order.
        keep_tail: whether a last line without a newline is complete
            (``keep_tail(b"")``: whether the stream is final).
        first_line: the number of the first line read.
        offset: the input offset ``read`` starts at (0: a BOM is dropped).
        limit: the longest line kept, newline excluded.
    """
    state = _Splitter(first_line, offset, limit)
    piece = min(piece, limit)
    damage = ""
    at_start = offset == 0
    size = len(BOM) if at_start else piece
    while True:
        try:
            data = read(size)
        except StreamDamaged as exc:
            damage = str(exc)
            break
        if not data:
            break
        if at_start:  # the first bytes of the stream: a BOM is no part of a record
            at_start, size = False, piece
            if data == BOM:
                state.read += len(BOM)
                continue
        state.feed(data)
        if state.done_size >= chunk or state.found:
            yield state.take()
    last = state.finish(keep_tail, damage)
    if last is not None:
        yield last


class StreamDamaged(Exception):
    """A compressed stream ended early or is corrupt; the text says how."""


def sniff(chunks: Iterator[Chunk]) -> tuple[str, list[Chunk]]:
    """Tell the format of a stream from its first chunks (see :func:`classify`).

    Returns the format and the chunks read to tell it, for the caller to read
    again before the rest of ``chunks``.
    """
    taken: list[Chunk] = []
    lines: list[bytes] = []
    for item in chunks:
        taken.append(item)
        heads = {n.number: n.head for n in item.long}
        for number, line in enumerate(item.data.split(b"\n")[:-1], item.first_line):
            line = heads.get(number, line)
            if line.strip():
                lines.append(line)
        if len(lines) >= 2:
            break
    head = b"".join(c.data[:_HEAD] for c in taken[:2])[:_HEAD]
    return classify(lines[:2], head), taken


def classify(lines: Iterable[bytes], head: bytes = b"") -> str:
    """Tell the format from a stream's first two non-blank lines.

    Returns ``"jsonl"`` (one record per line, v1), ``"otlp"`` (one OTLP
    ``TracesData`` per line), ``"otlp-document"`` (one OTLP document over
    several lines, read whole) or ``"document"`` (a JSON document over several
    lines that is not OTLP: not a trace). A first line that is not complete
    JSON (cut off, say) followed by a line that opens an object at its first
    byte is a line of records like the others; followed by an indented or
    closing line, it starts a pretty-printed document.
    """
    first, second = [*lines, b"", b""][:2]
    text = first.strip()
    if text in (b"{", b"["):
        return _document(first + b"\n" + second, head)
    if not text.startswith(b"{"):
        return "jsonl"
    import msgspec

    try:
        value = msgspec.json.decode(text)
    except RecursionError:  # nested past any record: a bad line of records, refused by its reader
        return "otlp" if _opens_with_resource_spans(text) else "jsonl"
    except msgspec.DecodeError:
        if second.strip() and not second.startswith(b"{"):
            return _document(first + b"\n" + second, head)
        return "otlp" if _opens_with_resource_spans(text) else "jsonl"
    return "otlp" if isinstance(value, dict) and "resourceSpans" in value else "jsonl"


def _document(first: bytes, head: bytes) -> str:
    """A document is OTLP if ``resourceSpans`` shows in its first 64 KiB."""
    found = b'"resourceSpans"' in first[:_HEAD] or b'"resourceSpans"' in head
    return "otlp-document" if found else "document"


def _opens_with_resource_spans(head: bytes) -> bool:
    return head[1:].lstrip().startswith(b'"resourceSpans"')


def guarded(read: Callable[[int], bytes]) -> Callable[[int], bytes]:
    """Wrap a gzip stream's ``read`` so that a cut-off or corrupt stream ends it.

    The error becomes :class:`StreamDamaged`, which :func:`split_lines` turns
    into the last chunk's ``damage``: every line before the damage is kept.
    """
    import gzip
    import zlib

    def read_guarded(size: int) -> bytes:
        try:
            return read(size)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise StreamDamaged(f"gzip stream damaged ({exc or 'it ends early'})") from None

    return read_guarded
