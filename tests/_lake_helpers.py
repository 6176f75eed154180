"""Stores and lakes for the lake tests: a simulated fleet, and one of hostile names."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from _fleet_helpers import ANSI, CASES, HOSTILE, MARKUP, T0, hostile_run
from _fleet_helpers import write as write_events

from tracekit.events import Event
from tracekit.lake.layout import TABLES
from tracekit.simulation import simulate
from tracekit.store import Store

START = "2026-11-20T00:00:00Z"
#: The end of the report windows the tests ask for (the simulated fleet ends before it).
NOW = datetime(2026, 11, 23, 12, 0)

#: Service names a folder or a query could misread: path and partition
#: separators, escapes, quotes, control characters, bidi controls, digits only.
HOSTILE_SERVICES = [
    "a/b=c",
    "50% off",
    "üñï\u202ecode\x1b[31m",
    "123",
    'it\'s "quoted" \\ back',
    "__x__:*?#{[]}^",
    HOSTILE,
    ANSI,
    MARKUP,
]


def simulated_store(tmp: Path, runs: int = 600, seed: int = 3, window: float = 3) -> Path:
    """A store of a simulated fleet over ``window`` days, every class present."""
    trace = tmp / f"sim-{seed}.jsonl"
    simulate(trace, runs=runs, seed=seed, start=START, window_ms=window * 86_400_000.0)
    db = tmp / f"sim-{seed}.duckdb"
    with Store(db) as store:
        store.ingest(trace)
    return db


def hostile_events() -> list[Event]:
    """Every run class under each hostile service, spread over two days."""
    events: list[Event] = []
    for n, service in enumerate(HOSTILE_SERVICES):
        t0 = T0 + (n % 2) * 86_400_000.0 + n * 1000.0
        for run_id, (build, _) in CASES.items():
            events += build(f"{n}-{run_id}", service=service, t0=t0)
        events += hostile_run(f"{n}-hostile", service=service, t0=t0)
    return events


def hostile_store(tmp: Path) -> Path:
    db = tmp / "hostile.duckdb"
    with Store(db) as store:
        store.ingest(write_events(tmp / "hostile.jsonl", hostile_events()))
    return db


def store_counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            for t in TABLES  # every table the lake exports
        }
    finally:
        con.close()


def classified(db: Path) -> dict[str, Any]:
    """The store's own classification: every run's class, and the failed calls' roles."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute(
            "SELECT run_id, outcome, circle, origin_invocation_id, origin_agent, origin_code,"
            " origin_step FROM runs ORDER BY run_id"
        ).fetchall()
        roles = con.execute(
            "SELECT invocation_id, failure_role FROM invocations"
            " WHERE failure_role IS NOT NULL ORDER BY invocation_id"
        ).fetchall()
    finally:
        con.close()
    return {"runs": runs, "roles": roles}


def report_json(report: Any) -> Any:
    """A report as the plain data its JSON output holds."""
    return json.loads(json.dumps(report.to_dict()))


def collected_lake(tmp: Path, runs: int = 150, seed: int = 21) -> dict[str, Any]:
    """Three ``tracekit serve`` exporting every second into one lake, fed by a trace-id router.

    The fleet's records go in mixed batches; one run goes in two halves, the
    second sent only once the lake holds the first (the run incomplete there).
    Returns the lake, a store fed everything directly, and what was observed.
    """
    from _server_helpers import start

    from tracekit.lake.engine import duckdb_lake
    from tracekit.server.route import TraceRouter

    trace = tmp / "fleet.jsonl"
    simulate(trace, runs=runs, seed=seed, start=START, window_ms=2 * 86_400_000.0)
    lines = trace.read_bytes().splitlines()
    split_trace = json.loads(lines[0])["traceId"]
    split = [line for line in lines if json.loads(line).get("traceId") == split_trace]
    rest = [line for line in lines if json.loads(line).get("traceId") != split_trace]
    lake = tmp / "lake"
    servers = [
        start(
            tmp / f"c{n}.duckdb", "--lake", str(lake), "--export-every", "1s", "--writer", f"c{n}"
        )
        for n in range(3)
    ]
    try:
        router = TraceRouter([s.url for s in servers])
        sent: dict[str, int] = {}
        for at in range(0, len(rest), 250):
            for url, n in router.send_records(rest[at : at + 250]).items():
                sent[url] = sent.get(url, 0) + n
        halves = [router.send_records(split[: len(split) // 2])]
        split_run = json.loads(split[0])["runId"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (lake / "_tracekit_lake.json").exists():
                con = duckdb_lake(lake)
                found = con.execute(
                    "SELECT outcome FROM runs WHERE run_id = ? AND outcome IS NOT NULL", [split_run]
                ).fetchall()
                con.close()
                if found:
                    break
            time.sleep(0.3)
        first_seen = found[0][0] if found else None
        halves.append(router.send_records(split[len(split) // 2 :]))
    finally:
        codes = [server.stop() for server in servers]
    single = tmp / "single.duckdb"
    with Store(single) as store:
        store.ingest(trace)
    return {
        "lake": lake,
        "single": single,
        "sent": sent,
        "halves": halves,
        "split_run": split_run,
        "first_seen": first_seen,
        "codes": codes,
        "errors": [server.err for server in servers],
    }
