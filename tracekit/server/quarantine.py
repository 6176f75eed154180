"""A load that fails is bisected: the records at fault go to ``rejects``, the rest is stored.

The loader calls :func:`load_quarantined` around its load step. A batch the
store takes is loaded once, as always. A batch it refuses for its data (a
value DuckDB cannot hold, an error in the derivation) is split in halves
and loaded again, down to the single records it refuses: those are kept in
``rejects`` with the store's reason and the record itself, and never
retried. A failure that is not the data's (a full disk: the store gone)
is raised, so the loader stops and the spool keeps everything.

Example:
    >>> def load(records, refused=()):
    ...     if b"bad" in records:
    ...         raise ValueError("no")
    ...     return len(records)
    >>> load_quarantined([b"a", b"bad", b"c"], [], load, healthy=lambda: True)
    (2, 1)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

import duckdb

from tracekit._util.quarantine import quarantine
from tracekit.errors import StoreWriteError

__all__ = ["Load", "load_quarantined", "run_quarantined"]

T = TypeVar("T")
R = TypeVar("R")

#: ``load(records, refused)``: records stored (``refused``: ``(raw, reason)`` pairs kept as rejects).
Load = Callable[[Sequence[bytes], Sequence[tuple[str, str]]], int]
#: Characters of a refused record kept as its raw text in ``rejects``.
_RAW: Final = 65_536


#: A write the disk refused, in DuckDB's words (a full disk, a file past its limit).
_WRITE_FAILURE: Final = re.compile(
    r"could not write|no space left|file too large|disk (is )?full", re.I
)


def _not_the_data(exc: BaseException) -> bool:
    # A load straight into the store (spans, a derivation) sees DuckDB's own
    # error for a full disk: an IOException, or a failed commit that says so.
    if isinstance(exc, (StoreWriteError, duckdb.FatalException, duckdb.IOException)):
        return True
    return isinstance(exc, (OSError, MemoryError)) or bool(_WRITE_FAILURE.search(str(exc)))


def load_quarantined(
    records: list[bytes],
    refused: list[tuple[str, str]],
    load: Load,
    *,
    healthy: Callable[[], bool],
) -> tuple[int, int]:
    """Load ``records`` (and ``refused``), bisecting a refused batch; ``(stored, set aside)``.

    Raises:
        Exception: a failure that is not the data's (the store's, the disk's).
    """
    try:
        return load(records, refused), 0
    except Exception as exc:
        if _not_the_data(exc) or not records or not healthy():
            raise
    done = quarantine(records, lambda part: load(part, ()), fatal=_not_the_data, healthy=healthy)
    bad = [
        (record.decode("utf-8", "replace")[:_RAW], f"the store could not load it: {reason}")
        for record, reason in done.rejected
    ]
    return sum(done.results) + load([], [*refused, *bad]), len(bad)


def run_quarantined(
    items: Sequence[T], step: Callable[[Sequence[T]], R], *, healthy: Callable[[], bool]
) -> tuple[list[R], list[tuple[T, str]]]:
    """``step(items)``, bisected down to the items at fault if the store refuses it for its data.

    Returns the results of the parts that ran and each item set aside with
    its reason. A step must leave nothing behind when it raises (one
    transaction).

    Raises:
        Exception: a failure that is not the data's (the store's, the disk's).

    Example:
        >>> def derive(traces):
        ...     if "bad" in traces:
        ...         raise ValueError("no")
        ...     return len(traces)
        >>> run_quarantined(["a", "bad", "c"], derive, healthy=lambda: True)
        ([1, 1], [('bad', 'ValueError: no')])
    """
    try:
        return [step(items)], []
    except Exception as exc:
        if _not_the_data(exc) or not items or not healthy():
            raise
    done = quarantine(items, step, fatal=_not_the_data, healthy=healthy)
    return done.results, done.rejected
