"""The limits a v1 record must keep, and the words a rejected line is given.

Every reader applies these same rules (``tracekit tree``, both paths of
``tracekit ingest`` and the OTLP mapping), so a line is valid or not wherever
it is read, for the same reason. The limits are what every column and every
consumer of a record can hold (see ``docs/trace-format.md``):

* ``ts`` lies in the years 1970 to 9999: ``0 <= ts <= MAX_TS_MS``;
* a duration is at most that span either way: ``|durationMs| <= MAX_TS_MS``
  (clocks of different hosts may make it a little negative);
* ``seq`` fits a signed 64-bit integer;
* ids and names are not empty;
* ``attrs`` and an error's ``cause`` nest at most :data:`MAX_DEPTH` levels.

Example:
    >>> nesting_depth({"a": [1, {"b": []}]})
    4
    >>> too_deep({"a": [[[]]]}, 3)
    True
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = [
    "DEPTH_REASON",
    "MAX_DEPTH",
    "MAX_SEQ",
    "MAX_TS_MS",
    "MAX_TS_NS",
    "MIN_SEQ",
    "MIN_TS_MS",
    "VALUE_DEPTH_REASON",
    "nesting_depth",
    "reject_reason",
    "too_deep",
]

#: 1970-01-01T00:00:00Z, in milliseconds since the Unix epoch.
MIN_TS_MS: Final = 0
#: 9999-12-31T23:59:59.999Z: the last moment a calendar date of four digits holds.
MAX_TS_MS: Final = 253_402_300_799_999
#: :data:`MAX_TS_MS` in nanoseconds, for OTLP's ``*TimeUnixNano``.
MAX_TS_NS: Final = MAX_TS_MS * 1_000_000
MIN_SEQ: Final = -(2**63)
MAX_SEQ: Final = 2**63 - 1
#: How deep ``attrs`` (counting itself) and a chain of error causes may nest.
MAX_DEPTH: Final = 64
DEPTH_REASON: Final = f"nested deeper than {MAX_DEPTH} levels (in attrs or error causes)"
#: The same limit on an OTLP attribute value (arrays and key/value lists).
VALUE_DEPTH_REASON: Final = f"an attribute value nests deeper than {MAX_DEPTH} levels"


def nesting_depth(value: Any) -> int:
    """How many objects and arrays nest in ``value`` (a scalar is 0); iterative.

    Example:
        >>> nesting_depth(1), nesting_depth([]), nesting_depth({"a": [[]]})
        (0, 1, 3)
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((inner, depth) for inner in item if isinstance(inner, (dict, list)))
    return deepest


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests more than ``limit`` objects and arrays deep."""
    return nesting_depth(value) > limit


def reject_reason(exc: BaseException) -> str:
    """The one-line reason a line that failed to decode is rejected.

    The same words whichever reader met the line: ``not a v1 record: ...``
    when it is JSON of the wrong shape, ``not JSON: ...`` when it is not JSON.

    Example:
        >>> reject_reason(msgspec.ValidationError("Expected `str`, got `int` - at `$.agent`"))
        'not a v1 record: Expected `str`, got `int` - at `$.agent`'
        >>> reject_reason(RecursionError("maximum recursion depth exceeded"))
        'not a v1 record: nested deeper than 64 levels (in attrs or error causes)'
    """
    if isinstance(exc, RecursionError):
        return f"not a v1 record: {DEPTH_REASON}"
    if isinstance(exc, msgspec.ValidationError):
        return f"not a v1 record: {exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 ({exc.reason})"
    return f"not JSON: {exc}"
