"""Typed records as the columns of ``events``: what the v1 parse gives, without JSON parsed again.

A v1 line is parsed by DuckDB (:mod:`tracekit.store.record_sql`); a record
the rules derived from spans is already typed, so its columns are read off
the object here, the one place that does it, and only its ``raw`` text is
written (:func:`~tracekit.events.encode_event`). A record is kept only if
that text is one :func:`~tracekit.events.decode_event` accepts, as a line
would be; any other is refused in the words a line would get. The columns
are those :data:`~tracekit.store.record_sql.PARSE_SQL` gives for the same
text (tests/test_event_columns.py compares them); a column added to
``events`` is added to :data:`COLUMNS` and :func:`_columns`.

Example:
    >>> from tracekit.events import RunStart
    >>> table, refused = event_columns([(3, 0, RunStart(ts=1.0, runId="r", agent="a"))])
    >>> table.column("agent").to_pylist(), table.column("raw").to_pylist(), refused
    (['a'], ['{"type":"run.start","ts":1.0,"runId":"r","agent":"a"}'], [])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec
import numpy as np
import pyarrow as pa

from tracekit._util.arrow import bools, floats, ints, nullable_ints, strings, utf8
from tracekit.events import Enter, Event, Exit, Node, RunEnd, RunStart, decode_event, encode_event
from tracekit.validate import reject_reason

__all__ = ["COLUMNS", "event_columns"]

#: The columns built, with their kind (``line``, ``item`` and ``raw`` besides).
COLUMNS: Final = (
    ("type", "string"),
    ("ts_ms", "double"),
    ("seq", "int64"),
    ("run_id", "string"),
    ("parent_run_id", "string"),
    ("invocation_id", "string"),
    ("agent", "string"),
    ("node", "string"),
    ("kind", "string"),
    ("status", "string"),
    ("ok", "bool"),
    ("duration_ms", "double"),
    ("error_code", "string"),
    ("service", "string"),
    ("trace_id", "string"),
)
_BUILD: Final[dict[str, Callable[[list[Any]], pa.Array]]] = {
    "string": strings,
    "double": floats,
    "int64": nullable_ints,
    "bool": bools,
}

#: ``(line, item, text, reason)`` of a record whose text a line could not be.
Refused = list[tuple[int, int, str, str]]


def event_columns(records: Sequence[tuple[int, int, Event]]) -> tuple[pa.Table, Refused]:
    """``(line, item, record)`` as a table of ``line``, ``item``, :data:`COLUMNS` and ``raw``.

    Returns the table of the records kept and those refused.
    """
    texts = [encode_event(event) for _, _, event in records]
    bad = _unreadable(texts)
    refused: Refused = []
    if bad:
        refused = [(*records[i][:2], texts[i].decode(), reason) for i, reason in bad.items()]
        records = [r for i, r in enumerate(records) if i not in bad]
        texts = [t for i, t in enumerate(texts) if i not in bad]
    events = [event for _, _, event in records]
    values = _columns(events)
    arrays = [
        ints([line for line, _, _ in records], np.int64),
        ints([item for _, item, _ in records], np.int32),
        *(_BUILD[kind](values[name]) for name, kind in COLUMNS),
        utf8(texts),
    ]
    names = ["line", "item", *(name for name, _ in COLUMNS), "raw"]
    return pa.Table.from_arrays(arrays, names=names), refused


_RECORDS: Final = msgspec.json.Decoder(list[Event])


def _unreadable(texts: list[bytes]) -> dict[int, str]:
    """The texts a line could not be, by their place, with the words a line would get.

    The common case, every text readable, is one decode of them all.
    """
    try:
        _RECORDS.decode(b"[" + b",".join(texts) + b"]")
        return {}
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, ValueError):
        pass
    bad: dict[int, str] = {}
    for i, text in enumerate(texts):
        try:
            decode_event(text)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            bad[i] = reject_reason(exc)
    return bad


_TAGS: Final = {
    Enter: "enter",
    Exit: "exit",
    Node: "node",
    RunStart: "run.start",
    RunEnd: "run.end",
}


def _columns(events: list[Event]) -> dict[str, list[Any]]:
    """Each column's values, as the v1 parse reads the records' text.

    A field a record type does not have is null, as the parse leaves it.
    """
    error = [getattr(e, "error", None) for e in events]
    status, ok = _status_ok(events, error)
    return {
        "type": [_TAGS[e.__class__] for e in events],
        "ts_ms": [e.ts for e in events],
        "seq": [e.seq for e in events],
        "run_id": [e.runId for e in events],
        "parent_run_id": [getattr(e, "parentRunId", None) for e in events],
        "invocation_id": [getattr(e, "invocationId", None) for e in events],
        "agent": [getattr(e, "agent", None) for e in events],
        "node": [e.id if e.__class__ is Node else getattr(e, "node", None) for e in events],
        "kind": [getattr(e, "kind", None) for e in events],
        "status": status,
        "ok": ok,
        "duration_ms": [getattr(e, "durationMs", None) for e in events],
        "error_code": [None if x is None else x.code for x in error],
        "service": [e.service for e in events],
        "trace_id": [e.traceId for e in events],
    }


def _status_ok(
    events: list[Event], errors: list[Any]
) -> tuple[list[str | None], list[bool | None]]:
    """An exit's status (said, else from ``ok`` and its error) and ``ok``, a step's and a run end's."""
    status: list[str | None] = []
    ok: list[bool | None] = []
    for event, error in zip(events, errors, strict=True):
        if isinstance(event, Exit):
            said = event.status or ("error" if event.ok is False or error is not None else "ok")
            status.append(said)
            ok.append(event.ok if event.ok is not None else said == "ok")
            continue
        status.append(None)
        if isinstance(event, Node):
            ok.append(event.ok if event.ok is not None else (False if error is not None else None))
        else:
            ok.append(getattr(event, "ok", None))
    return status, ok
