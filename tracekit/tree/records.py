"""What the tree takes: typed records, and plain dicts parsed from JSONL, mixed.

The seed's ``agentTree(events)`` is handed what a runtime's ``trace`` callback
pushed, or ``JSON.parse`` of each line: plain objects. :func:`as_records`
gives the builder the typed records it folds, turning each dict into its
record with the same rules as a line of a file (:func:`~tracekit.events.event_from_dict`).

Example:
    >>> from tracekit.events import Node
    >>> [type(e).__name__ for e in as_records([{"type": "node", "ts": 1, "runId": "r", "id": "a"},
    ...                                        Node(ts=2, runId="r", id="b")])]
    ['Node', 'Node']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from tracekit.errors import InvalidRecordError
from tracekit.events import Enter, Event, Exit, Node, RunEnd, RunStart, event_from_dict

__all__ = ["ACCEPTED", "as_records"]

_CLASSES: Final = frozenset({Enter, Exit, Node, RunEnd, RunStart})
#: Said by every TypeError, so a caller learns what to pass instead.
ACCEPTED: Final = (
    "tracekit's records (Enter, Exit, Node, RunStart, RunEnd) or dicts with "
    "the same keys, as parsed from a JSONL line"
)


def as_records(events: Iterable[Any]) -> list[Event]:
    """The typed records of ``events``: records kept as they are, dicts turned into records.

    Raises:
        InvalidRecordError: a dict is not a valid record (the error names its
            index and what is wrong).
        TypeError: ``events`` is not an iterable of records and dicts, or an
            item is something else (a string, a number, bytes...).

    Example:
        >>> as_records([{"type": "node", "ts": 1, "runId": "r"}])
        Traceback (most recent call last):
        ...
        tracekit.errors.InvalidRecordError: events[0]: Object missing required field `id`
    """
    if isinstance(events, (str, bytes, bytearray, dict)) or not isinstance(events, Iterable):
        raise TypeError(f"the events must be an iterable of {ACCEPTED}; got {_what(events)}")
    records: list[Any] = events if isinstance(events, list) else list(events)
    if set(map(type, records)) <= _CLASSES:  # the usual case: one C-speed pass, no copy
        return records
    return [_record(index, item) for index, item in enumerate(records)]


def _record(index: int, item: Any) -> Event:
    if type(item) in _CLASSES:
        event: Event = item
        return event
    if isinstance(item, tuple(_CLASSES)):  # a subclass: the builder dispatches on exact types
        return event_from_dict(msgspec.to_builtins(item))
    if isinstance(item, dict):
        try:
            return event_from_dict(item)
        except (msgspec.ValidationError, ValueError, TypeError) as exc:
            raise InvalidRecordError(index, str(exc)) from None
        except RecursionError:
            raise InvalidRecordError(index, "nested too deep") from None
    raise TypeError(f"events[{index}] is {_what(item)}: the tree takes {ACCEPTED}")


def _what(value: object) -> str:
    """Name a value for an error message, without printing all of it."""
    text = repr(value)
    return f"a {type(value).__name__} ({text[:60]}{'...' if len(text) > 60 else ''})"
