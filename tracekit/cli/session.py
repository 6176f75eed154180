"""``tracekit session ID``: a session's runs in order of start, as text, JSON or CSV."""

from __future__ import annotations

import json
from typing import Any

from tracekit.cli.tables import render
from tracekit.store.sessions import describe_session, session_summary

__all__ = ["session_view"]


def session_view(session_id: str, db: str | None, fmt: str, *, wait: float = 0.0) -> str:
    """What ``tracekit session`` prints: ``table`` (text), ``json`` (one object) or ``csv``.

    Raises:
        SessionNotFoundError: no run has this session (the error names some that do).
    """
    from tracekit.cli.remote import open_reader

    with open_reader(db, None, wait) as store:
        runs = store.session(session_id)
    if fmt == "csv":
        return render(runs, "csv")
    if fmt == "json":
        rows = [json.loads(line) for line in render(runs, "json").splitlines()]
        doc: dict[str, Any] = session_summary(session_id, runs)
        doc["run_count"] = doc.pop("runs")
        doc["runs"] = rows
        return json.dumps(doc, indent=2)
    return describe_session(session_id, runs)
