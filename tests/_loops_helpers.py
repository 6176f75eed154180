"""A store with loops: a small fleet ingested by ``tracekit ingest``, its ``loops`` rows added.

The ``loops`` table is written by the classification; these tests fill it by
INSERT into a real store (the runs it names are the store's own), so that what
reads it (the fleet report, the dashboards, ``/metrics``, the lake) is tested
on known rows whose sums are worked out by hand here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import duckdb
from _cache_helpers import built_once
from _fleet_helpers import crashed, handled, healthy, recursion, write
from _store_helpers import TRACEKIT

#: Names from traces at their worst for a text format: a quote, a line feed, a backslash.
HOSTILE_SERVICE = 'svc "q"\nnext\\line'
HOSTILE_AGENT = 'or"ders\n{x="1"} 9\\'
HOSTILE_CIRCLE = f"billing -> {HOSTILE_AGENT} -> billing"  # as the classification writes it

T0 = 1_767_600_000_000.0  # 2026-01-05T08:00:00Z
HOUR = 3_600_000.0

# (run, circle, revisits, stopped, limit_code, origin, invocations, model calls, in, out, ms)
LOOPS: list[tuple[Any, ...]] = [
    ("r-rec", HOSTILE_CIRCLE, 1, "refused", "AGENT_RECURSION", HOSTILE_AGENT, 3, 2, 100, 10, 5.0),
    ("r-ok1", "billing -> refunds -> billing", 4, "finished", None, "billing", 9, 8, 4000, 400, 900.0),
    ("r-ok2", "billing -> refunds -> billing", 3, "silent", "max_turns", "refunds", 7, 6, 3000, 300, 700.0),
    ("r-deg", "billing -> refunds -> billing", 5, "silent", "max_turns", "refunds", 11, 10, 5000, 500, 1100.0),
    ("r-ok3", "planner -> critic -> planner", 6, "limit", "UsageLimitExceeded", "critic", 12, 6, 1200, 120, 300.0),
    ("r-ok3", "billing -> refunds -> billing", 3, "finished", None, "billing", 6, None, None, None, None),
]  # fmt: skip


def fleet_file(path: Path) -> Path:
    """Six root runs: a recursion (hostile names), three healthy, a degraded one, a crashed one."""
    events = [
        *recursion("r-rec", [HOSTILE_AGENT, "billing"], service=HOSTILE_SERVICE, t0=T0),
        *healthy("r-ok1", t0=T0 + HOUR),
        *healthy("r-ok2", t0=T0 + 2 * HOUR),
        *healthy("r-ok3", t0=T0 + 3 * HOUR),
        *handled("r-deg", t0=T0 + 4 * HOUR),
        *crashed("r-crash", t0=T0 + 5 * HOUR),
    ]
    return write(path, events)


def loop_store(tmp: Path) -> Path:
    """A copy in ``tmp`` of the store :func:`_build_loop_store` makes (built once per process)."""
    return built_once("loop_store", _build_loop_store, tmp / "loops.duckdb")


def _build_loop_store(tmp: Path) -> Path:
    """``tracekit ingest`` of :func:`fleet_file` into a new store, then :data:`LOOPS` inserted."""
    db = tmp / "loops.duckdb"
    subprocess.run(
        [TRACEKIT, "ingest", str(fleet_file(tmp / "fleet.jsonl")), "--db", str(db)],
        check=True,
        capture_output=True,
    )
    con = duckdb.connect(str(db))
    try:
        # Exactly these rows, whatever the classification wrote for the fleet's own circle.
        con.execute("DELETE FROM loops")
        con.executemany("INSERT INTO loops VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", LOOPS)
    finally:
        con.close()
    return db


def hand_sum(circle: str, stopped: str) -> dict[str, Any]:
    """The sums of :data:`LOOPS` for one circle and stop kind, worked out in Python."""
    rows = [r for r in LOOPS if r[1] == circle and r[3] == stopped]

    def total(at: int) -> Any:
        values = [r[at] for r in rows if r[at] is not None]
        return sum(values) if values else None

    return {
        "runs": len({r[0] for r in rows}),
        "revisits": total(2),
        "invocations": total(6),
        "model_calls": total(7),
        "input_tokens": total(8),
        "output_tokens": total(9),
        "duration_ms": total(10),
    }
