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
from tracekit.intake.otlp.decode_json_fast import decode_spans_fast

__all__ = ["RawSpan", "RawTraces", "extra_text", "json_text", "read_shell", "shell_spans"]

_NO_RAW: Final = msgspec.Raw(b"")
_EMPTY: Final = frozenset({b"", b"null", b"[]", b"{}", b'""', b"0", b"false"})
_SPACE: Final = re.compile(rb"[ \t\r\n]")


class _RawStatus(msgspec.Struct):
    code: Any = None
    message: Any = None


class RawSpan(msgspec.Struct, forbid_unknown_fields=True):
    """A span of the usual spelling, its nested values left as JSON (any other key: the dict path)."""

    traceId: Any = None
    spanId: Any = None
    parentSpanId: Any = None
    name: Any = None
    kind: Any = None
    startTimeUnixNano: Any = None
    endTimeUnixNano: Any = None
    status: _RawStatus | None = None
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


def shell_spans(data: bytes, shell: RawTraces) -> list[Span] | None:
    """The typed decoder's spans, if it reads them all (else the dict path decides)."""
    try:
        spans = decode_spans_fast(data)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
        return None
    count = sum(
        len(scope.spans)
        for rs in shell.resourceSpans or ()
        for scope in rs.scopeSpans or rs.instrumentationLibrarySpans
    )
    return spans if len(spans) == count else None


def json_text(raw: msgspec.Raw) -> str | None:
    """A nested value as compact JSON; None when absent or empty (a falsy value, as the dict path)."""
    data = bytes(raw)
    if data in _EMPTY:
        return None
    if _SPACE.search(data):
        data = msgspec.json.format(data, indent=-1)
        if data in _EMPTY:
            return None
    return data.decode()


def extra_text(raw: RawSpan) -> str | None:
    """The span's other keys (``traceState``, ``flags``, dropped counts) as one JSON object."""
    parts = [f'"{key}":{text}' for key in _EXTRA if (text := _value(getattr(raw, key))) is not None]
    return "{" + ",".join(parts) + "}" if parts else None


def _value(raw: msgspec.Raw) -> str | None:
    data = bytes(raw)
    if not data:
        return None
    return (msgspec.json.format(data, indent=-1) if _SPACE.search(data) else data).decode()
