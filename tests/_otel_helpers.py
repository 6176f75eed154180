"""A plain-OpenTelemetry fleet written as OTLP JSON, ingested into a store, compared to its truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracekit.simulation.otel_apps import Truth
from tracekit.simulation.otel_export import otlp_json_lines
from tracekit.simulation.otel_fleet import otel_fleet
from tracekit.store import Store

#: Each root run's class, origin (agent and depth: 0 for the root agent) and circle, by trace id.
_FOUND = """
SELECT r.trace_id, r.outcome, r.origin_agent,
    CASE WHEN r.origin_agent IS NULL THEN NULL ELSE coalesce(i.depth, 0) END, r.circle,
    r.origin_code
FROM runs r LEFT JOIN invocations i ON i.invocation_id = r.origin_invocation_id
"""


def otel_trace(path: Path, runs: int, seed: int) -> dict[str, Truth]:
    """Run the fleet's code and write its spans as OTLP JSON lines; return the truths."""
    spans, truths = otel_fleet(runs, seed=seed)
    path.write_text("\n".join(otlp_json_lines(spans)) + "\n")
    return truths


def otel_store(tmp: Path, runs: int = 200, seed: int = 5) -> Path:
    """A store holding an ingested plain-OTel fleet."""
    db = tmp / f"otel-{seed}.duckdb"
    trace = tmp / f"otel-{seed}.otlp.jsonl"
    otel_trace(trace, runs, seed)
    with Store(db) as store:
        store.ingest(trace)
    return db


def found(store: Store) -> dict[str, tuple[Any, ...]]:
    """What the store says of each run: class, origin agent and depth, circle, origin code."""
    return {row[0]: tuple(row[1:]) for row in store.con.execute(_FOUND).fetchall()}


def expected(truth: Truth) -> tuple[Any, ...]:
    return (truth.outcome, truth.origin_agent, truth.origin_depth, truth.circle, truth.origin_code)


def mismatches(got: dict[str, tuple[Any, ...]], truths: dict[str, Truth]) -> list[str]:
    """Every run whose class, origin or circle differs from what its code did (empty: all equal)."""
    assert got.keys() == truths.keys()
    return [
        f"{tid}: got {got[tid]} want {expected(t)}"
        for tid, t in truths.items()
        if got[tid] != expected(t)
    ]
