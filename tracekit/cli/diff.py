"""``tracekit diff``: two runs compared, or one run against its fleet.

A side is a trace file (``FILE``, or ``FILE#RUN_ID`` for one of its runs) or,
with ``--db``, a run id in that store (an existing file still reads as a
file). Both take the road of ``tracekit tree``: records, then
:func:`~tracekit.tree.build_forest`, then :meth:`~tracekit.tree.Forest.run`;
the comparison itself is :func:`tracekit.tree.diff.diff_runs`.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from tracekit._util.gcpause import gc_paused
from tracekit._util.text import escape
from tracekit.errors import TracekitError
from tracekit.intake import read_trace
from tracekit.tree.build import build_forest
from tracekit.tree.diff import RunDiff, Slower, diff_runs
from tracekit.tree.diff_view import describe_diff
from tracekit.tree.forest import RunTree

__all__ = ["DiffView", "against_fleet_view", "diff_view", "load_run"]


class DiffView(NamedTuple):
    """What ``tracekit diff`` prints, and the result for callers that want it."""

    stdout: str
    diff: RunDiff


def _split(spec: str) -> tuple[str, str | None]:
    """``FILE#RUN`` as ``(FILE, RUN)``; a file whose own name holds ``#`` stays whole."""
    if os.path.exists(spec) or "#" not in spec:
        return spec, None
    path, _, run = spec.rpartition("#")
    return path, run or None


def load_run(
    spec: str, *, db: str | None = None, run_id: str | None = None, wait: float = 0.0
) -> tuple[RunTree, str]:
    """One side of a diff: its run, and what to call where it came from.

    Raises:
        TraceFileError: the file is missing or unreadable.
        RunNotFoundError: no such run in the file or the store.
        TracekitError: the file holds no run.
    """
    path, named = _split(spec)
    wanted = named if named is not None else run_id
    if db is not None and not os.path.exists(path):
        from tracekit.cli.remote import open_reader

        with open_reader(db, None, wait) as store:
            events = store.events(spec)
        return build_forest(events).run(spec, source=f"{db}:{spec}"), db
    with gc_paused():
        forest = build_forest(read_trace(path).events)
    if wanted is not None:
        return forest.run(wanted, source=path), path
    roots = [run for run in forest.runs if run.kind == "root"] or forest.runs
    if not roots:
        raise TracekitError(f"{escape(path)} holds no run to compare")
    return roots[0], path


def diff_view(
    a: str,
    b: str,
    *,
    db: str | None = None,
    runs: tuple[str | None, str | None] = (None, None),
    slower: str | None = None,
    fmt: str = "text",
    color: bool = False,
    wait: float = 0.0,
) -> DiffView:
    """Load both sides, compare them and render: the body of ``tracekit diff A B``.

    Raises:
        TracekitError: a bad ``slower`` threshold, or a side that cannot be loaded.
    """
    threshold = Slower.parse(slower) if slower is not None else Slower()
    run_a, source_a = load_run(a, db=db, run_id=runs[0], wait=wait)
    run_b, source_b = load_run(b, db=db, run_id=runs[1], wait=wait)
    found = diff_runs(run_a, run_b, slower=threshold, sources=(source_a, source_b))
    text = found.to_json().decode() if fmt == "json" else describe_diff(found, color=color)
    return DiffView(text, found)


def against_fleet_view(
    run_id: str,
    *,
    db: str,
    rare_below: str = "5%",
    fmt: str = "text",
    wait: float = 0.0,
) -> str:
    """``tracekit diff RUN --against-fleet --db FILE``: the run's rare and missing paths.

    Raises:
        TracekitError: a bad share, no such run, or no other run of its agent.
    """
    from tracekit.cli.remote import server_url
    from tracekit.fleet.rare import against_fleet, describe_against_fleet
    from tracekit.store import Store

    share = _share(rare_below)
    url = server_url(db, None)
    if url is not None:  # tracekit serve holds the store: it answers
        from tracekit.server.client import ServerClient

        return ServerClient(url).against_fleet(run_id, rare_below=share, fmt=fmt)
    with Store(db, read_only=True, wait=wait) as store:
        found = against_fleet(store, run_id, rare_below=share)
    return found.to_json().decode() if fmt == "json" else describe_against_fleet(found)


def _share(text: str) -> float:
    """``5%`` or ``0.05`` as 0.05."""
    spelled = text.strip()
    try:
        value = float(spelled[:-1]) / 100 if spelled.endswith("%") else float(spelled)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise TracekitError(
            f"--rare {escape(text)!r}: not a share", hint="Say 5% (or 0.05), between 0 and 100%."
        )
    return value
