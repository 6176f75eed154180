"""Reading a store back: filters for runs, a window parser, read-only SQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from tracekit.errors import StoreError

__all__ = ["check_read_only", "parse_since", "runs_query"]

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_HINT = "Use a span such as 30m, 2h or 7d, or an ISO time such as 2026-01-01T09:00."
_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """Turn ``30m``, ``2h``, ``7d`` or an ISO time into a naive UTC datetime.

    Example:
        >>> parse_since("2h", now=datetime(2026, 1, 1, 12, tzinfo=UTC))
        datetime.datetime(2026, 1, 1, 10, 0)
    """
    match = _SPAN.match(text)
    try:
        if match:
            now = now or datetime.now(UTC)
            moment = now - timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
            return moment.astimezone(UTC).replace(tzinfo=None)
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
    except ValueError:
        raise StoreError(f"--since {text!r}: not a time span or a time", hint=_HINT) from None
    except OverflowError:
        raise StoreError(f"--since {text!r}: reaches beyond the years 1 to 9999") from None
    return moment


def runs_query(
    *,
    status: str | None = None,
    service: str | None = None,
    agent: str | None = None,
    since: str | datetime | None = None,
    limit: int | None = None,
) -> tuple[str, list[Any]]:
    """Build the SELECT behind :meth:`Store.runs` and ``tracekit runs``.

    ``status`` matches the run's ``status`` (ok, error, running) or its
    ``outcome`` (``failed`` matches every ``failed:*``).
    """
    where: list[str] = []
    params: list[Any] = []
    if status:
        where.append("(status = ? OR outcome = ? OR outcome LIKE ? || ':%')")
        params += [status, status, status]
    if service:
        where.append("service = ?")
        params.append(service)
    if agent:
        where.append(
            "(agent = ? OR run_id IN (SELECT root_run_id FROM invocations WHERE agent = ?))"
        )
        params += [agent, agent]
    if since is not None:
        where.append("start_at >= ?")
        params.append(parse_since(since) if isinstance(since, str) else since)
    sql = "SELECT * FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY start_ms DESC NULLS LAST, run_id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, params


def check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Refuse anything but SELECT (and EXPLAIN / DESCRIBE / SHOW) statements.

    Raises:
        StoreError: the query writes, or is not valid SQL.
    """
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise StoreError(f"not valid SQL: {str(exc).splitlines()[0]}") from None
    if not statements:
        raise StoreError("no SQL statement given")
    allowed = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
    for statement in statements:
        if statement.type not in allowed:
            kind = statement.type.name
            raise StoreError(
                f"tracekit sql is read-only: {kind} statements are refused",
                hint="Only SELECT queries run here; the store changes only through ingest.",
            )
