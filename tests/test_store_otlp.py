"""The same fleet from v1 JSONL and from its OTLP JSON: the same runs and invocations."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd

from tracekit import Store
from tracekit.simulation.simulator import simulate

RUN_COLUMNS = [
    "run_id",
    "service",
    "agent",
    "start_ms",
    "end_ms",
    "duration_ms",
    "ok",
    "status",
    "failure",
    "error_code",
    "error_message",
    "has_start",
    "has_end",
    "invocations",
    "failed_invocations",
    "max_depth",
]
INVOCATION_COLUMNS = [
    "invocation_id",
    "run_id",
    "parent_run_id",
    "root_run_id",
    "parent_invocation_id",
    "agent",
    "node",
    "kind",
    "service",
    "start_ms",
    "end_ms",
    "duration_ms",
    "status",
    "ok",
    "error_code",
    "error_message",
    "depth",
    "has_enter",
    "has_exit",
]


def frames(path: Path, db: Path) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    with Store(db) as store:
        report = store.ingest(path)
        runs = store.runs().sort_values("run_id")[RUN_COLUMNS].reset_index(drop=True)
        inv = store.invocations().sort_values(["run_id", "invocation_id"])
        return runs, inv[INVOCATION_COLUMNS].reset_index(drop=True), report.reconciliation()


def test_jsonl_and_otlp_give_the_same_store(tmp_path: Path) -> None:
    jsonl, otlp = tmp_path / "fleet.jsonl", tmp_path / "fleet.otlp.jsonl"
    simulate(str(jsonl), runs=150, seed=11)
    simulate(str(otlp), runs=150, seed=11, format="otlp")
    runs_a, inv_a, line_a = frames(jsonl, tmp_path / "a.duckdb")
    runs_b, inv_b, line_b = frames(otlp, tmp_path / "b.duckdb")
    assert line_a == line_b
    assert len(runs_a) == 150 and len(inv_a) > 150
    pd.testing.assert_frame_equal(runs_a, runs_b)
    pd.testing.assert_frame_equal(inv_a, inv_b)


def test_an_otlp_document_and_bad_otlp_lines(tmp_path: Path) -> None:
    otlp = tmp_path / "fleet.otlp.jsonl"
    simulate(str(otlp), runs=3, seed=2, format="otlp")
    lines = otlp.read_text().splitlines()
    damaged = tmp_path / "damaged.otlp.jsonl"
    damaged.write_text(
        "\n".join([lines[0], "{not json", '{"resourceSpans": 5}', *lines[1:]]) + "\n"
    )
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(damaged)
        assert report.sources[0].format == "otlp"
        assert report.totals.rejected == 2
        rejects = store.rejects()
        assert rejects.line.tolist() == [2, 3]
        assert all(r.startswith("not OTLP JSON") for r in rejects.reason)
        assert len(store.runs()) == 3
        gz = tmp_path / "again.json.gz"
        with gzip.open(gz, "wt") as fh:
            fh.write(otlp.read_text())
        again = store.ingest(gz)
        assert again.totals.accepted == 0 and again.totals.duplicates == again.totals.read > 0


def test_a_single_otlp_document_over_many_lines(tmp_path: Path) -> None:
    import json

    otlp = tmp_path / "one.otlp.jsonl"
    simulate(str(otlp), runs=1, seed=5, format="otlp")
    docs = [json.loads(line) for line in otlp.read_text().splitlines()]
    merged = {"resourceSpans": [rs for doc in docs for rs in doc["resourceSpans"]]}
    pretty = tmp_path / "trace.json"
    pretty.write_text(json.dumps(merged, indent=2))
    runs_a, inv_a, _ = frames(otlp, tmp_path / "a.duckdb")
    runs_b, inv_b, _ = frames(pretty, tmp_path / "b.duckdb")
    pd.testing.assert_frame_equal(runs_a, runs_b)
    pd.testing.assert_frame_equal(inv_a, inv_b)


def test_the_spans_of_a_parent_loop_are_rejected_lines(tmp_path: Path) -> None:
    import json

    from tests._store_helpers import cli
    from tests.test_intake_otlp import DELEGATION, L1, L2, LOOP_REASON, _loop_trace

    path = _loop_trace(tmp_path / "loop.otlp.jsonl")
    db = tmp_path / "s.duckdb"
    out = cli("ingest", str(path), db=db).stdout
    # the 6 records of the delegation, and the two spans of the loop refused
    assert "8 lines read = 6 accepted + 2 rejected + 0 duplicates" in out
    rows = [json.loads(x) for x in cli("rejects", "--format", "json", db=db).stdout.splitlines()]
    assert [(r["line"], r["reason"]) for r in rows] == [
        (2, f"span {L1}: {LOOP_REASON}"),
        (2, f"span {L2}: {LOOP_REASON}"),
    ]
    assert all(f'"spanId":"{r["reason"][5:21]}"' in r["raw"] for r in rows)
    runs = cli("runs", "--format", "csv", db=db).stdout
    assert DELEGATION[0]["spanId"] in runs and L1 not in runs and L2 not in runs


def test_a_root_agents_own_model_calls_count_in_the_runs_tokens(tmp_path: Path) -> None:
    """A plain-OTel root agent's model calls ride on run.end, as the SDK's do."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracekit.simulation.otel_apps import Apps
    from tracekit.simulation.otel_export import otlp_json_lines

    exporter = InMemorySpanExporter()
    apps = Apps(exporter, services=("desk",))

    def root() -> None:
        apps.model("desk", 100, 40)
        apps.agent("desk", "helper", lambda: apps.model("desk", 3, 2))

    apps.run("desk", "desk", root)
    path = tmp_path / "t.otlp.jsonl"
    path.write_text("\n".join(otlp_json_lines(exporter.get_finished_spans())) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(path)
        row = store.con.execute("SELECT input_tokens, output_tokens FROM runs").fetchone()
    assert row == (103, 42)
