"""Reading a store back: filters for runs, a window parser, read-only SQL."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NoReturn

import duckdb

from tracekit._util.text import duration_ms, escape
from tracekit.errors import StoreError
from tracekit.failures.outcomes import OUTCOMES

__all__ = [
    "STATUSES",
    "check_names",
    "check_read_only",
    "check_status",
    "parse_since",
    "rejects_query",
    "runs_query",
]

#: What a run's ``status`` filter takes: a status, ``failed`` (every ``failed:*``) or an outcome.
STATUSES: Final = ("ok", "error", "running", "failed", *OUTCOMES[1:])
_LISTED: Final = 20  # known names an error lists before "and N more"
_KNOWN_SQL: Final = {
    "service": "SELECT service FROM runs UNION SELECT service FROM invocations",
    "agent": "SELECT agent FROM runs UNION SELECT agent FROM invocations",
}

_HINT = "Use a span such as 30m, 2h or 7d, or an ISO time such as 2026-01-01T09:00."
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """Turn ``30m``, ``2h``, ``7d`` or an ISO time into a naive UTC datetime.

    Example:
        >>> parse_since("2h", now=datetime(2026, 1, 1, 12, tzinfo=UTC))
        datetime.datetime(2026, 1, 1, 10, 0)
    """
    span = duration_ms(text, bare=False)
    try:
        if span is not None:
            now = now or datetime.now(UTC)
            moment = now - timedelta(milliseconds=span)
            return moment.astimezone(UTC).replace(tzinfo=None)
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
    except ValueError:
        raise StoreError(f"--since {text!r}: not a time span or a time", hint=_HINT) from None
    except OverflowError:
        raise StoreError(f"--since {text!r}: reaches beyond the years 1 to 9999") from None
    return moment


def check_status(status: str | None) -> None:
    """Refuse a status filter that no run can match (``eror``), naming those that can.

    Raises:
        StoreError: ``status`` is neither a status nor an outcome.
    """
    if status and status not in STATUSES:
        raise StoreError(
            f"status '{escape(status)}' is not a run status or outcome",
            hint=_suggest(status, STATUSES) + "Use one of: " + ", ".join(STATUSES) + ".",
        )


def check_names(
    con: duckdb.DuckDBPyConnection, *, service: str | None = None, agent: str | None = None
) -> None:
    """Refuse a service or agent filter that no run has, listing the ones the store knows.

    A misspelt name would otherwise give an empty answer that looks like good news.

    Raises:
        StoreError: no run or invocation has this service or agent.
    """
    for kind, value in (("service", service), ("agent", agent)):
        if not value:
            continue
        sql = f"SELECT name FROM ({_KNOWN_SQL[kind]}) AS k(name) WHERE name IS NOT NULL"
        known = [name for (name,) in con.execute(sql + " ORDER BY name").fetchall()]
        if value in known:
            continue
        listed = ", ".join(escape(name) for name in known[:_LISTED])
        more = f" and {len(known) - _LISTED} more" if len(known) > _LISTED else ""
        raise StoreError(
            f"no run has {kind} '{escape(value)}'",
            hint=_suggest(value, known)
            + (f"Known {kind}s: {listed}{more}." if known else "The store has no runs yet."),
        )


def _suggest(value: str, known: Any) -> str:
    close = difflib.get_close_matches(value, list(known), n=1)
    return f"Did you mean '{escape(close[0])}'? " if close else ""


def runs_query(
    *,
    status: str | None = None,
    service: str | None = None,
    agent: str | None = None,
    since: str | datetime | None = None,
    limit: int | None = None,
    session: str | None = None,
) -> tuple[str, list[Any]]:
    """Build the SELECT behind :meth:`Store.runs` and ``tracekit runs``.

    ``status`` matches the run's ``status`` (ok, error, running) or its
    ``outcome`` (``failed`` matches every ``failed:*``); ``session`` keeps
    the runs of one session.

    Raises:
        StoreError: ``status`` is none of :data:`STATUSES`.
    """
    check_status(status)
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
    if session is not None:
        where.append("session_id = ?")
        params.append(session)
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


def rejects_query(limit: int | None = None) -> str:
    """The SELECT behind :meth:`Store.rejects` and ``tracekit rejects``: oldest first.

    Example:
        >>> rejects_query(2)
        'SELECT * FROM rejects ORDER BY ingest_id, line LIMIT 2'
    """
    sql = "SELECT * FROM rejects ORDER BY ingest_id, line"
    return sql if limit is None else f"{sql} LIMIT {int(limit)}"


def check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Refuse anything but one SELECT, or an EXPLAIN (ANALYZE) of one SELECT.

    DuckDB's own parser decides: ``extract_statements`` gives the statement's
    type, ``json_serialize_sql`` (which takes only a SELECT) its whole tree, in
    which every query node must be a SELECT (a ``WITH`` may hold a DELETE).
    ``DESCRIBE``, ``SHOW`` and ``SUMMARIZE`` are SELECTs to DuckDB.

    Raises:
        StoreError: not one statement, not valid SQL, or not a plain SELECT.
    """
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise StoreError(f"not valid SQL: {_first_line(exc)}") from None
    if not statements:
        raise StoreError("no SQL statement given")
    if len(statements) > 1:
        raise StoreError(
            f"the store's SQL takes one statement at a time ({len(statements)} given)",
            hint="Run each SELECT on its own.",
        )
    statement = statements[0]
    if statement.type is duckdb.StatementType.EXPLAIN:
        _check_select(con, _explained(statement.query), "an EXPLAIN of ")
    elif statement.type is duckdb.StatementType.SELECT:
        _check_select(con, statement.query, "")
    else:
        _refuse(f"{statement.type.name} statements are refused")


def _check_select(con: duckdb.DuckDBPyConnection, sql: str, prefix: str) -> None:
    row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    tree: dict[str, Any] = json.loads(row[0]) if row else {"error": True}
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        _refuse(f"{prefix}a statement that is not a SELECT is refused")
    writes = sorted(set(_node_types(tree["statements"])) - _QUERY_NODES)
    if writes:
        kinds = ", ".join(kind.split("_")[0] for kind in writes)
        _refuse(f"{prefix}a SELECT that writes ({kinds} inside it) is refused")


def _node_types(tree: Any) -> Iterator[str]:
    """Every query node's type in a serialized statement (``SELECT_NODE``, ``DELETE_QUERY_NODE``...)."""
    stack = [tree]
    while stack:  # iterative: a deeply nested query must not overflow Python's stack
        item = stack.pop()
        if isinstance(item, dict):
            kind = item.get("type")
            if isinstance(kind, str) and kind.endswith("_NODE"):
                yield kind
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _explained(query: str) -> str:
    """The statement an ``EXPLAIN [ANALYZE] [(options)]`` is about, found by DuckDB's tokenizer."""
    bounds = [offset for offset, _ in duckdb.tokenize(query)] + [len(query)]
    tokens = [
        (query[start:end].strip(), kind, start)
        for (start, kind), end in zip(duckdb.tokenize(query), bounds[1:], strict=True)
        if kind != duckdb.token_type.comment
    ]
    words = iter(tokens[1:])  # the first is EXPLAIN itself
    for text, _, start in words:
        if text.upper() in ("ANALYZE", "ANALYSE"):
            continue
        if text != "(":
            return query[start:]
        depth = 1
        for inner, _, _ in words:
            depth += {"(": 1, ")": -1}.get(inner, 0)
            if depth == 0:
                break
    return ""


def _refuse(what: str) -> NoReturn:
    raise StoreError(
        f"the store's SQL is read-only: {what}",
        hint="Only a SELECT (or an EXPLAIN of one) runs here; the store changes only through ingest.",
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
