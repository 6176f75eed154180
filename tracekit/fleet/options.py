"""What a fleet report covers and how it is computed: one object, passed down.

``tracekit fleet`` parses its options into a :class:`FleetOptions` once;
:func:`tracekit.fleet.fleet_report` packs its keywords into one; the report
reads the window, the page and the engine from it. No function between the
command line and the queries lists the options one by one.

Example:
    >>> options = FleetOptions(since="24h", agent="billing", limit=10)
    >>> options.agent, options.limit, options.offset
    ('billing', 10, 0)
    >>> FleetOptions(offset=-1)
    Traceback (most recent call last):
    ...
    tracekit.errors.StoreError: limit 50 and offset -1: neither may be negative
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final, Literal, TypeAlias

from tracekit.errors import StoreError
from tracekit.store import FleetFilter, Rows

__all__ = ["DEFAULT_LIMIT", "Engine", "FleetOptions", "Percentiles"]

Engine: TypeAlias = Literal["duckdb", "spark"]
Percentiles: TypeAlias = Literal["exact", "approx"]

#: Rows of each list of runs (or circles) a report holds unless asked for more.
DEFAULT_LIMIT: Final = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetOptions:
    """The options of one fleet report.

    Attributes:
        since: a span back from now (``24h``, ``7d``) or an ISO time; None for all.
        service: only this service.
        agent: only runs that invoked this agent, calls by or to it.
        now: the end of the window (default: the clock).
        lake: instead of a store, a lake exported by ``tracekit export`` (``docs/lake.md``).
        engine: what reads the lake: ``"duckdb"`` (here) or ``"spark"`` (``remote``).
        remote: the Spark Connect address, ``sc://HOST:15002``.
        percentiles: ``"exact"`` (on every engine) or ``"approx"`` (each
            engine's own sketch: faster on a large lake, not equal across engines).
        limit: rows of each list of runs or circles (degraded runs, circles)
            the report holds; their full counts are in ``totals``. None: all.
        offset: where the page of those lists starts (newest degraded run: 0).

    Raises:
        StoreError: a negative ``limit`` or ``offset``.
    """

    since: str | datetime | None = None
    service: str | None = None
    agent: str | None = None
    now: datetime | None = None
    lake: str | os.PathLike[str] | None = None
    engine: Engine = "duckdb"
    remote: str | None = None
    percentiles: Percentiles = "exact"
    limit: int | None = DEFAULT_LIMIT
    offset: int = 0

    def __post_init__(self) -> None:
        if (self.limit is not None and self.limit < 0) or self.offset < 0:
            raise StoreError(
                f"limit {self.limit} and offset {self.offset}: neither may be negative"
            )

    def filter(self) -> FleetFilter:
        """The runs and calls the report looks at; a lake's day partitions are pruned too.

        Example:
            >>> FleetOptions(service="desk").filter().service
            'desk'
        """
        flt = FleetFilter.make(self.since, self.service, self.agent, now=self.now)
        return replace(flt, partitioned=True) if self.lake is not None else flt

    def page(self, rows: Rows) -> Rows:
        """The page of a capped list: ``limit`` rows from ``offset``."""
        end = None if self.limit is None else self.offset + self.limit
        return Rows(rows.columns, rows.types, rows.rows[self.offset : end])
