"""Which runs and calls a fleet read looks at: a window, a service, an agent.

:class:`FleetFilter` gives SQL conditions on ``runs`` and ``invocations``
(and, on a lake, on the ``day`` partition key) with their parameters; every
fleet read of the store takes one.

Example:
    >>> where, params = FleetFilter(service="billing").runs_where()
    >>> where, params
    ('TRUE AND service = ?', ['billing'])
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from tracekit.store.query import parse_since

__all__ = ["FleetFilter"]


@dataclass(frozen=True, slots=True)
class FleetFilter:
    """Which runs and calls a metric looks at.

    Attributes:
        start: the window opens (naive UTC); None for the whole store.
        end: the window closes (exclusive); None for no bound.
        service: only this service.
        agent: only runs that invoked this agent (or calls by or to it).
        partitioned: the tables have the lake's ``day`` partition key: the window
            constrains it too, so that files outside the window are never opened.
    """

    start: datetime | None = None
    end: datetime | None = None
    service: str | None = None
    agent: str | None = None
    partitioned: bool = False

    @classmethod
    def make(
        cls,
        since: str | datetime | None = None,
        service: str | None = None,
        agent: str | None = None,
        *,
        now: datetime | None = None,
    ) -> FleetFilter:
        """A filter from the CLI's options; ``since`` is a span back from ``now`` or a time."""
        now = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
        start = parse_since(since, now=now) if isinstance(since, str) else since
        return cls(
            start=start, end=now if start is not None else None, service=service, agent=agent
        )

    def previous(self) -> FleetFilter | None:
        """The window of the same length just before this one (None without a window)."""
        if self.start is None or self.end is None:
            return None
        length = self.end - self.start
        return replace(self, start=self.start - length, end=self.start)

    def _days(self, p: str) -> tuple[list[str], list[Any]]:
        """The window on the ``day`` partition key (a row's day is its start's, in UTC).

        The end is inclusive: a window ending at noon needs that day's partition.
        """
        if not self.partitioned:
            return [], []
        where: list[str] = []
        params: list[Any] = []
        if self.start is not None:
            where.append(f"{p}day >= ?")
            params.append(self.start.strftime("%Y-%m-%d"))
        if self.end is not None:
            where.append(f"{p}day <= ?")
            params.append(self.end.strftime("%Y-%m-%d"))
        return where, params

    def runs_where(self, alias: str = "") -> tuple[str, list[Any]]:
        """SQL conditions on ``runs`` and their parameters."""
        p = f"{alias}." if alias else ""
        where: list[str] = ["TRUE"]
        params: list[Any] = []
        if self.start is not None:
            where.append(f"{p}start_at >= ?")
            params.append(self.start)
        if self.end is not None:
            where.append(f"{p}start_at < ?")
            params.append(self.end)
        if self.service is not None:
            where.append(f"{p}service = ?")
            params.append(self.service)
        days, day_params = self._days(p)
        where += days
        params += day_params
        if self.agent is not None:
            where.append(
                f"({p}agent = ? OR {p}run_id IN"
                " (SELECT root_run_id FROM invocations WHERE agent = ?))"
            )
            params += [self.agent, self.agent]
        return " AND ".join(where), params

    def calls_where(self, alias: str) -> tuple[str, list[Any]]:
        """SQL conditions on ``invocations`` (the window by the call's own start)."""
        where: list[str] = ["TRUE"]
        params: list[Any] = []
        for column, op, value in (
            ("start_at", ">=", self.start),
            ("start_at", "<", self.end),
            ("service", "=", self.service),
        ):
            if value is not None:
                where.append(f"{alias}.{column} {op} ?")
                params.append(value)
        days, day_params = self._days(f"{alias}.")
        return " AND ".join(where + days), params + day_params
