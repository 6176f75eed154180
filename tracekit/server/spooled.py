"""Spooled span entries read back as received rows, for the loader.

Each spooled entry holds the rows of :data:`~tracekit.intake.otlp.received.SPAN_NAMES`
(a server spooled before those kept only the decoded fields: such a row is
made whole by :func:`~tracekit.server.decode.legacy_row`) and the spans
refused at the request. An entry that cannot be read is refused and named,
never retried: the rest of the cycle is stored.

Example:
    >>> spooled_spans([(0, b"\\xc1 not msgpack", 0.0)])[2][0][1]
    'spool entry at byte 0'
"""

from __future__ import annotations

from typing import Any, Final

from tracekit._util.quarantine import reason_of
from tracekit.server.spool import decode_payload

__all__ = ["TRACE", "row_text", "spooled_spans"]

#: A received row's trace id (its place in ``SPAN_NAMES``).
TRACE: Final = 2
_RAW: Final = 65_536


def spooled_spans(
    entries: list[tuple[int, bytes, float]],
) -> tuple[list[tuple[Any, ...]], list[int], list[tuple[int, str, str]], int]:
    """The rows of spooled entries, each row's entry offset, the spans refused, entries unreadable.

    ``entries`` are ``(offset, payload, arrived)``; a refusal is ``(offset, raw, reason)``.
    """
    from tracekit.intake.otlp.received import SPAN_NAMES
    from tracekit.server.decode import legacy_row

    width = len(SPAN_NAMES)
    rows: list[tuple[Any, ...]] = []
    lines: list[int] = []
    refused: list[tuple[int, str, str]] = []
    unreadable = 0
    for start, payload, _ in entries:
        try:
            entry = decode_payload(payload)
            # a server spooled before kept only the decoded fields: fewer of them
            got = [tuple(r) if len(r) == width else legacy_row(r) for r in entry.spans]
        except Exception as exc:  # never retried forever: refused, named, the rest goes on
            refused.append((start, f"spool entry at byte {start}", f"unreadable: {reason_of(exc)}"))
            unreadable += 1
            continue
        refused.extend((start, text, reason) for text, reason in entry.rejects)
        rows.extend(got)
        lines.extend([start] * len(got))
    return rows, lines, refused, unreadable


def row_text(row: tuple[Any, ...]) -> str:
    """A received row as ``rejects`` keeps it: the span's OTLP JSON (its ids at least)."""
    from tracekit.intake.otlp.received import SPAN_NAMES, span_document

    try:
        return span_document(dict(zip(SPAN_NAMES, row, strict=True)))[:_RAW]
    except Exception:  # the row itself is at fault: its ids at least
        return repr(row[TRACE : TRACE + 2])
