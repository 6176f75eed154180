"""Verdicts on span names, each asked once per distinct name.

A fleet's millions of spans share a few hundred names (``invoke_agent
triage``, ``execute_tool lookup``, ``Step 3``), and much of what the intake
asks of a span depends on its name alone: whether it reads as a handoff
(:mod:`tracekit.intake.otlp.handoff`), whether a framework's shape may claim
it (:mod:`tracekit.intake.otlp.shapes`). A :class:`NameMemo` answers such a
question with one dictionary lookup after the first span of a name; it
forgets everything past a bound, so names that never repeat (ids in span
names) cannot grow it without limit.

Example:
    >>> memo = NameMemo(lambda name: name.endswith(".run"))
    >>> memo["billing.run"], memo["Step 1"], memo["billing.run"]
    (True, False, True)
    >>> sorted(memo)
    ['Step 1', 'billing.run']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Generic, TypeVar

__all__ = ["NameMemo"]

T = TypeVar("T")
#: Distinct names remembered before a memo starts again (a few hundred is usual).
LIMIT: Final = 8192


class NameMemo(dict[str, T], Generic[T]):
    """``memo[name]``: ``of(name)``, computed on the first lookup of a name only.

    A plain dict underneath, so a name seen before costs a lookup and no call.
    ``of`` must be a pure function of the name; several threads may share a
    memo (at worst, a name is computed twice).
    """

    __slots__ = ("_limit", "_of")

    def __init__(self, of: Callable[[str], T], limit: int = LIMIT) -> None:
        super().__init__()
        self._of = of
        self._limit = limit

    def __missing__(self, name: str) -> T:
        if len(self) >= self._limit:
            self.clear()
        found = self[name] = self._of(name)
        return found
