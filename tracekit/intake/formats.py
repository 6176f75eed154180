"""The trace formats tracekit reads: one registry, one vocabulary.

Every command names a format by the words of :data:`FORMATS`: ``tracekit``
(v1 JSON lines, one enter/exit record a line) and ``otlp`` (OTLP JSON, one
``TracesData`` a line or one document). ``auto`` tells them by content:
``tracekit tree`` always, ``tracekit ingest --format auto`` by default. The
same word is what an ingest reports and stores in ``ingest_log.format``.

A format is one :class:`TraceFormat` entry: its name, ``sniff`` (whether a
stream's layout, as :func:`~tracekit.intake.lines.classify` tells it from the
first two lines, is this format's) and ``read`` (its decode into a
:class:`~tracekit.intake.jsonl.ReadResult`). The store reads each format's
records through its own Arrow adapter (``store/ingest.py``).

Example:
    >>> names()
    ('tracekit', 'otlp')
    >>> canonical("jsonl"), detect("otlp-document"), detect("document")
    ('tracekit', 'otlp', 'other')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Final

from tracekit.errors import TracekitError
from tracekit.events import MAX_LINE_BYTES
from tracekit.intake.jsonl import ReadResult, read_jsonl_blocks
from tracekit.intake.lines import guarded, sniff, split_lines
from tracekit.intake.sources import Source, open_stream

__all__ = [
    "AUTO",
    "FORMATS",
    "OTHER",
    "TraceFormat",
    "canonical",
    "described",
    "detect",
    "get",
    "is_document",
    "names",
    "sniff_source",
]

AUTO: Final = "auto"
#: What :func:`detect` says of a JSON document that is no trace (a saved tree, say).
OTHER: Final = "other"
_PEEK = 1 << 16


def _read_v1(blocks: Iterable[bytes], path: str, *, strict: bool, document: bool) -> ReadResult:
    del document  # v1 is read a line at a time, whatever the layout
    return read_jsonl_blocks(blocks, path, strict=strict)


def _read_otlp(blocks: Iterable[bytes], path: str, *, strict: bool, document: bool) -> ReadResult:
    # The OTLP pipeline (its decoders, dialects and rules) is loaded for an OTLP input only.
    from tracekit.intake.otlp.read import read_otlp

    return read_otlp(blocks, path, strict=strict, document=document)


@dataclass(frozen=True)
class TraceFormat:
    """One format: the word users see, how it is told by content, and its decode."""

    name: str
    title: str
    sniff: Callable[[str], bool]
    read: Callable[..., ReadResult]
    aliases: tuple[str, ...] = ()


FORMATS: Final = (
    # OTLP first: a v1 file is whatever no other format claims.
    TraceFormat("otlp", "OTLP JSON", lambda layout: layout.startswith("otlp"), _read_otlp),
    TraceFormat(
        "tracekit", "v1 JSON lines", lambda layout: layout == "jsonl", _read_v1, ("jsonl",)
    ),
)
_BY_NAME: Final = {n: f for f in FORMATS for n in (f.name, *f.aliases)}


def names() -> tuple[str, ...]:
    """The formats' names, as every command offers them (v1 first)."""
    return tuple(sorted((f.name for f in FORMATS), key=lambda n: n != "tracekit"))


def described() -> str:
    """The formats in words, for a message that says what a command reads.

    Example:
        >>> described()
        'v1 JSON lines or OTLP JSON'
    """
    return " or ".join(get(name).title for name in names())


def canonical(name: str) -> str:
    """The registry's word for a format name or alias; ``auto`` stays ``auto``.

    Raises:
        TracekitError: the name is no format's.
    """
    if name == AUTO:
        return AUTO
    found = _BY_NAME.get(name)
    if found is None:
        choices = ", ".join((AUTO, *names()))
        raise TracekitError(f"unknown trace format {name!r}: use one of {choices}")
    return found.name


def get(name: str) -> TraceFormat:
    """The entry of a format name or alias (see :func:`canonical`)."""
    return _BY_NAME[canonical(name)]


def detect(layout: str) -> str:
    """The format of a stream laid out as ``layout`` (:func:`~tracekit.intake.lines.classify`).

    A JSON document over several lines that no format claims is :data:`OTHER`.
    """
    for entry in FORMATS:
        if entry.sniff(layout):
            return entry.name
    return OTHER if layout.endswith("document") else "tracekit"


def sniff_source(source: Source) -> str:
    """The layout of a source from its first two lines (``classify``'s words).

    No more than two lines are read, even when the first is long or never
    ends (it is then seen by its head).
    """
    with open_stream(source) as stream:
        budget = _Budget(stream, MAX_LINE_BYTES + 2 * _PEEK)
        read = guarded(budget.read)
        chunks = split_lines(read, piece=_PEEK, chunk=_PEEK, keep_tail=lambda _: True)
        return sniff(chunks)[0]


def is_document(layout: str) -> bool:
    """Whether a layout is one JSON document over several lines (read whole)."""
    return layout.endswith("document")


class _Budget:
    """A stream that ends after ``left`` bytes, read a peek at a time."""

    def __init__(self, stream: IO[bytes], left: int) -> None:
        self.stream = stream
        self.left = left

    def read(self, size: int) -> bytes:
        data = self.stream.read(min(size, self.left, _PEEK))
        self.left -= len(data)
        return data
