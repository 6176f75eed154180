"""A line of OTLP/JSON in its usual spelling read as a shell: its structure, nested values kept as JSON.

:class:`~tracekit.intake.otlp.received.SpanRows` stores a span's
attributes, events, links, resource and scope as the JSON they came in;
decoding them to Python only to encode them again costs more than the rest
of the line. :func:`read_shell` reads the structure alone (msgspec, with
each nested value left as raw JSON), and refuses any key outside the usual
camelCase spelling, so that such a line goes through the dict path instead.

Example:
    >>> shell = read_shell(b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"ab",'
    ...                    b'"attributes":[{"key":"k","value":{"intValue":"1"}}]}]}]}]}')
    >>> json_text(shell.resourceSpans[0].scopeSpans[0].spans[0].attributes)
    '[{"key":"k","value":{"intValue":"1"}}]'
    >>> read_shell(b'{"resource_spans":[]}') is None
    True
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.decode_json_fast import (
    NESTED,
    Ids,
    _Status,
    resource_service,
    typed_span,
)

__all__ = ["RawSpan", "RawTraces", "extra_text", "json_text", "read_line", "read_shell"]

_NO_RAW: Final = msgspec.Raw(b"")
_EMPTY: Final = frozenset({b"", b"null", b"[]", b"{}", b'""', b"0", b"false"})
_SPACE: Final = re.compile(rb"[ \t\r\n]")
_LONGEST_EMPTY: Final = max(map(len, _EMPTY))


class RawSpan(msgspec.Struct, forbid_unknown_fields=True):
    """A span of the usual spelling: its scalars typed as the typed decoder's, nested values as JSON.

    Any other key sends the line to the dict path.
    """

    traceId: str = ""
    spanId: str = ""
    parentSpanId: str = ""
    name: str = ""
    kind: Any = None
    startTimeUnixNano: int | str | None = None
    endTimeUnixNano: int | str | None = None
    status: _Status | None = None
    attributes: msgspec.Raw = _NO_RAW
    events: msgspec.Raw = _NO_RAW
    links: msgspec.Raw = _NO_RAW
    traceState: msgspec.Raw = _NO_RAW
    flags: msgspec.Raw = _NO_RAW
    droppedAttributesCount: msgspec.Raw = _NO_RAW
    droppedEventsCount: msgspec.Raw = _NO_RAW
    droppedLinksCount: msgspec.Raw = _NO_RAW


_EXTRA: Final = (
    "traceState",
    "flags",
    "droppedAttributesCount",
    "droppedEventsCount",
    "droppedLinksCount",
)


class _RawScope(msgspec.Struct, forbid_unknown_fields=True):
    scope: msgspec.Raw = _NO_RAW
    instrumentationLibrary: msgspec.Raw = _NO_RAW
    spans: list[RawSpan] = []
    schemaUrl: Any = None


class _RawResource(msgspec.Struct, forbid_unknown_fields=True):
    resource: msgspec.Raw = _NO_RAW
    scopeSpans: list[_RawScope] = []
    instrumentationLibrarySpans: list[_RawScope] = []
    schemaUrl: Any = None


class RawTraces(msgspec.Struct, forbid_unknown_fields=True):
    """A ``TracesData`` of the usual spelling."""

    resourceSpans: list[_RawResource] | None = None


_SHELL: Final = msgspec.json.Decoder(RawTraces)


def read_shell(data: bytes) -> RawTraces | None:
    """The line's structure with its nested values as JSON, or None: not the usual spelling."""
    try:
        return _SHELL.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def read_line(data: bytes) -> tuple[RawTraces, list[Span]] | None:
    """A line of the usual spelling, read once: its shell and the typed decoder's spans.

    The nested values the rules read (attributes, events, links, resources)
    are decoded from the shell's raw JSON in one call for the whole line; the
    spans are those
    :func:`~tracekit.intake.otlp.decode_json_fast.decode_spans_fast` gives. None: the dict path
    decides (another spelling, a value of another type).

    Example:
        >>> shell, spans = read_line(b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":'
        ...     b'"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331",'
        ...     b'"startTimeUnixNano":"5","attributes":[]}]}]}]}')
        >>> spans[0].start, json_text(shell.resourceSpans[0].scopeSpans[0].spans[0].attributes)
        (5, None)
    """
    shell = read_shell(data)
    if shell is None or shell.resourceSpans is None:
        return None
    try:
        return shell, _typed(shell)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
        return None


def _typed(shell: RawTraces) -> list[Span]:
    # A Raw is joined as it is (it is a buffer); an absent value (no bytes) reads as empty.
    parts: list[list[bytes | msgspec.Raw]] = [[], [], []]
    resources: list[bytes | msgspec.Raw] = []
    for rs in shell.resourceSpans or ():
        resources.append(rs.resource or b"null")
        for scope in rs.scopeSpans or rs.instrumentationLibrarySpans:
            for raw in scope.spans:
                parts[0].append(raw.attributes or b"[]")
                parts[1].append(raw.events or b"[]")
                parts[2].append(raw.links or b"[]")
    nested = b"[[" + b"],[".join(b",".join(p) for p in (*parts, resources)) + b"]]"
    attributes, events, links, found = NESTED.decode(nested)
    ids = Ids()  # trace and parent ids repeat within a document
    spans: list[Span] = []
    at = 0
    for rs, resource in zip(shell.resourceSpans or (), found, strict=True):
        service = resource_service(resource)
        for scope in rs.scopeSpans or rs.instrumentationLibrarySpans:
            for head in scope.spans:
                spans.append(typed_span(head, attributes[at], events[at], links[at], service, ids))
                at += 1
    return spans


def json_text(raw: msgspec.Raw) -> str | None:
    """A nested value as compact JSON; None when absent or empty (a falsy value, as the dict path)."""
    if len(raw) <= _LONGEST_EMPTY and bytes(raw) in _EMPTY:
        return None
    if _SPACE.search(raw):  # a Raw is a buffer: read without a copy
        data = msgspec.json.format(raw, indent=-1)
        return None if data in _EMPTY else data.decode()
    return str(raw, "utf-8")


def extra_text(raw: RawSpan) -> str | None:
    """The span's other keys (``traceState``, ``flags``, dropped counts) as one JSON object."""
    if not (raw.traceState or raw.flags or raw.droppedAttributesCount or raw.droppedEventsCount
            or raw.droppedLinksCount):  # fmt: skip
        return None  # the usual span: none of them (a Raw of no bytes is false)
    parts = [f'"{key}":{text}' for key in _EXTRA if (text := _value(getattr(raw, key))) is not None]
    return "{" + ",".join(parts) + "}" if parts else None


def _value(raw: msgspec.Raw) -> str | None:
    data = bytes(raw)
    if not data:
        return None
    return (msgspec.json.format(data, indent=-1) if _SPACE.search(data) else data).decode()
