"""The one processor from stored spans to records: whole traces, read again as received.

The store keeps every span as received (:mod:`tracekit.intake.otlp.received`);
:func:`derive_traces` takes the spans of whole traces (every span a trace has,
from every file, request and restart) and maps them with the rules of today's
tracekit (:class:`~tracekit.intake.otlp.convert.OtlpConverter`), so a trace
that gains a span, or a store whose rules changed, is derived again from the
same evidence. :func:`deriver_version` names the rules; the store stamps each
derived trace with it.

Example:
    >>> derive_traces([]).records
    []
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from tracekit._version import __version__
from tracekit.events import Event, RunEnd
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.received import span_document

__all__ = ["RULES_VERSION", "Derived", "derive_traces", "deriver_version"]

#: Raised whenever the mapping rules change what a stored span derives to.
RULES_VERSION: Final = 1
_SHIFT = 40  # a line's key in the converter: its ingest above this bit, its line below


def deriver_version() -> str:
    """The name of the rules that derive records from spans (stamped on derived traces).

    Example:
        >>> deriver_version().startswith("tracekit ")
        True
    """
    return f"tracekit {__version__} rules {RULES_VERSION}"


@dataclass
class Derived:
    """What whole traces derive to: records and refused spans, each where its span was read."""

    #: ``(ingest, line, record)``, in the order the mapping gives them.
    records: list[tuple[int, int, Event]] = field(default_factory=list)
    #: ``(ingest, line, text, reason, trace)`` for each span the rules refuse.
    refused: list[tuple[int, int, str, str, str]] = field(default_factory=list)
    counts: SpanCounts = field(default_factory=SpanCounts)


def derive_traces(rows: list[dict[str, Any]]) -> Derived:
    """Map the stored spans of whole traces (rows with ``ingest_id``, ``line``, ``pos``).

    The rows come sorted by where they were read (ingest, line, place in the
    line); the spans of one line are fed as one document, as they came.
    """
    converter = OtlpConverter()
    key: int | None = None
    entries: list[str] = []
    for row in rows:
        here = (int(row["ingest_id"]) << _SHIFT) + int(row["line"])
        if here != key and entries:
            _feed(converter, key, entries)
            entries = []
        key = here
        entries.append(span_document(row))
    if entries:
        _feed(converter, key, entries)
    derived = Derived(counts=converter.counts)
    mask = (1 << _SHIFT) - 1
    rootless = _rootless(rows)
    for number, event in converter.finish_lines():
        if rootless and isinstance(event, RunEnd) and (event.traceId or "") in rootless:
            continue  # its root has not come: the run is not over, whatever its top span says
        derived.records.append((number >> _SHIFT, number & mask, event))
    for number, text, reason in converter.take_rejects():
        derived.refused.append((number >> _SHIFT, number & mask, text, reason, _trace_of(text)))
    return derived


def _rootless(rows: list[dict[str, Any]]) -> set[str]:
    """The traces none of whose spans is a root (one without a parent): their root has not come."""
    traces = {row["trace_id"] for row in rows}
    rooted = {row["trace_id"] for row in rows if not row.get("parent_span_id")}
    return traces - rooted


def _feed(converter: OtlpConverter, key: int | None, entries: list[str]) -> None:
    doc = '{"resourceSpans":[' + ",".join(entries) + "]}"
    converter.feed_json(doc.encode(), line=key or 0)


def _trace_of(text: str) -> str:
    try:
        span = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return ""
    found = span.get("traceId") if isinstance(span, dict) else None
    return found if isinstance(found, str) else ""
