"""Quarantine: a batch that fails is split until the items at fault are found; the rest goes on.

A batch that a step cannot take (a load, a mapping) must not be retried
whole forever, nor dropped whole: :func:`quarantine` runs the step on the
batch, and on a failure splits it in halves and runs each, down to single
items; an item that fails alone is set aside with the reason. One bad item
costs its own rejection and about ``2 * log2(n)`` extra runs of the step.

A failure that is not the data's (the disk is full, the store is gone) must
stop the step, not quarantine every item: ``fatal`` says which exceptions
pass through, and ``healthy`` (a cheap probe) is asked before an item is
blamed: if it fails, the original exception is raised.

:func:`leave_out` does the same for a step that needs its items together
(a trace is mapped whole): it finds, by bisecting, the items whose absence
lets the step run.

Example:
    >>> def load(part):
    ...     if 13 in part:
    ...         raise ValueError("13 is unlucky")
    ...     return len(part)
    >>> done = quarantine(list(range(20)), load)
    >>> sum(done.results), done.rejected
    (19, [(13, 'ValueError: 13 is unlucky')])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Quarantined", "leave_out", "quarantine", "reason_of"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Quarantined(Generic[T, R]):
    """What :func:`quarantine` did: the step's results, and each item set aside with its reason."""

    results: list[R] = field(default_factory=list)
    rejected: list[tuple[T, str]] = field(default_factory=list)


def _never(exc: BaseException) -> bool:
    return False


def _fine() -> bool:
    return True


def reason_of(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message.

    Example:
        >>> reason_of(OverflowError("cannot convert float infinity to integer"))
        'OverflowError: cannot convert float infinity to integer'
    """
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def quarantine(
    batch: Sequence[T],
    step: Callable[[Sequence[T]], R],
    *,
    fatal: Callable[[BaseException], bool] = _never,
    healthy: Callable[[], bool] = _fine,
) -> Quarantined[T, R]:
    """Run ``step`` on ``batch``; on a failure, on its halves, down to the items at fault.

    Args:
        batch: the items (a step on a part must be as good as on the whole).
        step: what to run; it must leave nothing behind when it raises.
        fatal: exceptions that are not the data's: raised at once.
        healthy: whether the step could work at all now; asked before a
            single item is blamed (False: the failure is raised).

    Raises:
        Exception: a ``fatal`` one, or any when ``healthy()`` says no.
    """
    done: Quarantined[T, R] = Quarantined()
    todo: list[Sequence[T]] = [batch]
    while todo:
        part = todo.pop()
        try:
            done.results.append(step(part))
        except Exception as exc:
            if fatal(exc):
                raise
            if len(part) > 1:
                half = len(part) // 2
                todo += [part[half:], part[:half]]  # the first half runs first
                continue
            if not healthy():
                raise
            done.rejected.append((part[0], reason_of(exc)))
    return done


def leave_out(items: Sequence[T], works: Callable[[list[T]], bool], *, most: int = 64) -> list[T]:
    """The items whose absence lets ``works`` succeed, found by bisecting (at most ``most``).

    Assumes ``works(part)`` fails exactly when ``part`` holds one of the
    items at fault, and that ``works([])`` succeeds. Each item found costs
    about ``log2(len(items))`` calls. Past ``most`` items, every item is
    given (the batch is beyond saving one by one).

    Example:
        >>> leave_out(list(range(100)), lambda part: 7 not in part and 70 not in part)
        [7, 70]
        >>> leave_out([1, 2, 3], lambda part: True)
        []
    """
    rest = list(items)
    found: list[T] = []
    while not works(rest):
        if len(found) >= most:
            return list(items)
        # The shortest failing prefix ends with an item at fault: works(rest[:low]) holds.
        low, high = 0, len(rest)
        while high - low > 1:
            middle = (low + high) // 2
            if works(rest[:middle]):
                low = middle
            else:
                high = middle
        found.append(rest.pop(high - 1))
    return found
