"""Typed records as the columns of ``events``: what the v1 parse gives, without JSON parsed again.

A v1 line is parsed by DuckDB (:mod:`tracekit.store.record_sql`); a record
the rules derived from spans is already typed, so its columns are read off
the object here, the one place that does it, and only its ``raw`` text is
written (:func:`~tracekit.events.encode_event`). A record is kept only if
that text is one :func:`~tracekit.events.decode_event` accepts, as a line
would be; any other is refused in the words a line would get. The columns
are those :data:`~tracekit.store.record_sql.PARSE_SQL` gives for the same
text (tests/test_event_columns.py compares them); a column added to
``events`` is added to :data:`COLUMNS` and :func:`_values`.

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
_BUILD: Final[dict[str, Callable[[list[Any]], pa.Array]]] = {"string": strings, "double": floats, "int64": nullable_ints, "bool": bools}

#: ``(line, item, text, reason)`` of a record whose text a line could not be.
Refused = list[tuple[int, int, str, str]]


def event_columns(records: Sequence[tuple[int, int, Event]]) -> tuple[pa.Table, Refused]:
    """``(line, item, record)`` as a table of ``line``, ``item``, :data:`COLUMNS` and ``raw``.

    Returns the table of the records kept and those refused.
    """
    lines: list[int] = []
    items: list[int] = []
    texts: list[bytes] = []
    rows: list[tuple[Any, ...]] = []
    refused: Refused = []
    for line, item, event in records:
        text = encode_event(event)
        try:
            decode_event(text)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            refused.append((line, item, text.decode(), reject_reason(exc)))
            continue
        lines.append(line)
        items.append(item)
        texts.append(text)
        rows.append(_values(event))
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    arrays = [
        ints(lines, np.int64),
        ints(items, np.int32),
        *(_BUILD[kind](list(values)) for values, (_, kind) in zip(columns, COLUMNS, strict=True)),
        utf8(texts),
    ]
    names = ["line", "item", *(name for name, _ in COLUMNS), "raw"]
    return pa.Table.from_arrays(arrays, names=names), refused


def _values(event: Event) -> tuple[Any, ...]:
    """One record's values in :data:`COLUMNS`' order, as the v1 parse reads its text."""
    ts, seq, service, trace = float(event.ts), event.seq, event.service, event.traceId
    if isinstance(event, Node):
        error = event.error
        ok = event.ok if event.ok is not None else (False if error is not None else None)
        code = error.code if error is not None else None
        return ("node", ts, seq, event.runId, None, None, None, event.id, None, None, ok,
                _ms(event.durationMs), code, service, trace)  # fmt: skip
    if isinstance(event, Enter):
        return ("enter", ts, seq, event.runId, event.parentRunId, event.invocationId,
                event.agent, event.node, event.kind, None, None, None, None, service, trace)  # fmt: skip
    if isinstance(event, Exit):
        error = event.error
        status = event.status or ("error" if event.ok is False or error is not None else "ok")
        ok = event.ok if event.ok is not None else status == "ok"
        code = error.code if error is not None else None
        return ("exit", ts, seq, event.runId, event.parentRunId, event.invocationId,
                event.agent, event.node, None, status, ok, _ms(event.durationMs), code,
                service, trace)  # fmt: skip
    if isinstance(event, RunStart):
        return ("run.start", ts, seq, event.runId, None, None, event.agent, None, None, None,
                None, None, None, service, trace)  # fmt: skip
    assert isinstance(event, RunEnd)
    error = event.error
    code = error.code if error is not None else None
    return ("run.end", ts, seq, event.runId, None, None, None, None, None, None, event.ok,
            _ms(event.durationMs), code, service, trace)  # fmt: skip


def _ms(value: float | None) -> float | None:
    return None if value is None else float(value)
