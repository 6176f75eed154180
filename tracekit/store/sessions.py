"""Sessions: the root runs that share a session (conversation) id, in order of start.

A run's session is the ``session`` of its ``run.start`` (``runs.session_id``).

Example:
    >>> from tracekit.store import Store
    >>> with Store("fleet.duckdb", read_only=True) as store:
    ...     first = store.sql("SELECT session_id FROM runs ORDER BY start_ms LIMIT 1").session_id[0]
    ...     runs = store.session(first)
    >>> list(runs.columns[:4])
    ['run_id', 'start_at', 'agent', 'outcome']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

import duckdb

from tracekit._util.text import escape, format_ms
from tracekit.errors import SessionNotFoundError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SESSION_COLUMNS", "describe_session", "session_runs", "session_summary"]

#: The columns of a session's runs, as ``tracekit session`` and ``open_session`` show them.
SESSION_COLUMNS: Final = (
    "run_id",
    "start_at",
    "agent",
    "outcome",
    "status",
    "duration_ms",
    "invocations",
    "input_tokens",
    "output_tokens",
    "service",
    "session_id",
)
_LISTED: Final = 5  # sessions named when one is not found


def session_runs(
    con: duckdb.DuckDBPyConnection, session_id: str, *, source: str = "the store"
) -> pd.DataFrame:
    """The runs of one session, oldest first (a run without a start time last).

    Raises:
        SessionNotFoundError: no run has this session; the error names some that exist.
    """
    frame = con.execute(
        f"SELECT {', '.join(SESSION_COLUMNS)} FROM runs WHERE session_id = ?"
        " ORDER BY start_ms NULLS LAST, run_id",
        [session_id],
    ).df()
    if frame.empty:
        raise _not_found(con, session_id, source)
    return frame


def _not_found(
    con: duckdb.DuckDBPyConnection, session_id: str, source: str
) -> SessionNotFoundError:
    rows = con.execute(
        "SELECT session_id, max(start_ms) AS last FROM runs WHERE session_id IS NOT NULL"
        f" GROUP BY session_id ORDER BY last DESC NULLS LAST, session_id LIMIT {_LISTED + 1}"
    ).fetchall()
    known = [str(row[0]) for row in rows]
    shown = ", ".join(escape(k) for k in known[:_LISTED])
    if len(known) > _LISTED:
        shown += " and more"
    hint = f"Sessions there (newest first): {shown}." if known else "No run there has a session."
    return SessionNotFoundError(
        f"session {escape(session_id)} is not in {escape(source)}",
        session_id=session_id,
        source=source,
        hint=hint,
    )


def session_summary(session_id: str, runs: pd.DataFrame) -> dict[str, Any]:
    """Counts over a session's runs: runs, failed runs (``failed:*``) and tokens.

    Example:
        >>> import pandas as pd
        >>> runs = pd.DataFrame({"outcome": ["ok", "failed:child"],
        ...     "input_tokens": [10, None], "output_tokens": [3, 4]})
        >>> session_summary("s", runs)
        {'session_id': 's', 'runs': 2, 'failed_runs': 1, 'input_tokens': 10, 'output_tokens': 7}
    """
    failed = runs["outcome"].fillna("").astype(str).str.startswith("failed:")
    return {
        "session_id": session_id,
        "runs": len(runs),
        "failed_runs": int(failed.sum()),
        "input_tokens": _total(runs["input_tokens"]),
        "output_tokens": _total(runs["output_tokens"]),
    }


def _total(column: Any) -> int | None:
    known = column.dropna()
    return int(known.sum()) if len(known) else None


def describe_session(session_id: str, runs: pd.DataFrame) -> str:
    """A session as text: a header, then one line a run in order of start (names escaped).

    Example:
        >>> import pandas as pd
        >>> runs = pd.DataFrame({"run_id": ["r1"], "start_at": [pd.Timestamp("2026-01-01 09:00")],
        ...     "agent": ["desk"], "outcome": ["ok"], "status": ["ok"], "duration_ms": [1200.0],
        ...     "input_tokens": [90], "output_tokens": [30]})
        >>> print(describe_session("s\\x1b[2J", runs))
        session s\\x1b[2J · 1 run, 0 failed · 90 in / 30 out tokens
          2026-01-01 09:00:00  r1  desk  ok  1200ms  90 in / 30 out
    """
    summary = session_summary(session_id, runs)
    n = summary["runs"]
    head = f"session {escape(session_id)} · {n} run{'s' if n != 1 else ''}"
    head += f", {summary['failed_runs']} failed · {_tokens(summary)} tokens"
    lines = [head]
    for row in runs.to_dict("records"):
        state = row.get("outcome") if isinstance(row.get("outcome"), str) else row.get("status")
        bits = [
            _when(row.get("start_at")),
            escape(str(row["run_id"])),
            escape(str(row.get("agent") or "?")),
            escape(str(state or "?")),
            _ms(row.get("duration_ms")),
            _tokens(row),
        ]
        lines.append("  " + "  ".join(bits))
    return "\n".join(lines)


def _when(value: Any) -> str:
    if not hasattr(value, "isoformat") or value != value:  # None, NaN, NaT
        return "(no start)"
    return str(value.isoformat(sep=" ", timespec="seconds"))


def _ms(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "running"
    return format_ms(float(value))


def _tokens(row: dict[str, Any]) -> str:
    def one(value: Any) -> str:
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        return "-" if missing or str(value) == "<NA>" else f"{int(value):,}"

    return f"{one(row.get('input_tokens'))} in / {one(row.get('output_tokens'))} out"
