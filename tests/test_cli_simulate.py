"""``tracekit simulate`` through the installed script, and ``tracekit tree`` on OTLP."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from tests._tree_helpers import run_cli


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_simulate_writes_the_fleet_and_its_truth(tmp_path: Path) -> None:
    out, truth = tmp_path / "fleet.jsonl", tmp_path / "truth.jsonl"
    fixed = ["--runs", "60", "--seed", "4", "--start", "2026-01-05T00:00:00Z"]
    result = run_cli("simulate", *fixed, "-o", str(out), "--truth", str(truth))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    rows = [json.loads(line) for line in truth.read_text().splitlines()]
    events = out.read_bytes().count(b"\n")
    assert result.stderr.startswith(f"wrote 60 runs, {events:,} events to {out} (")
    assert len(rows) == 60 and {"run_id", "outcome", "service", "agent"} <= set(rows[0])
    again = tmp_path / "again.jsonl"
    run_cli("simulate", *fixed, "-o", str(again))
    assert _sha(out) == _sha(again)


def test_simulate_without_start_ends_the_window_now(tmp_path: Path) -> None:
    truth, db = tmp_path / "truth.jsonl", tmp_path / "fleet.duckdb"
    out = tmp_path / "fleet.jsonl"
    before = time.time() * 1000
    made = run_cli(
        "simulate", "--runs", "50", "--window", "2h", "-o", str(out), "--truth", str(truth)
    )
    assert made.returncode == 0, made.stderr
    starts = [json.loads(line)["start_ms"] for line in truth.read_text().splitlines()]
    assert before - 2 * 3_600_000 - 1000 <= min(starts) and max(starts) <= time.time() * 1000
    assert run_cli("ingest", str(out), "--db", str(db)).returncode == 0
    listed = run_cli("runs", "--since", "2h", "--limit", "100", "--format", "csv", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) - 1 >= 49  # the header, then (nearly) every run


def test_simulate_to_stdout_and_gzip(tmp_path: Path) -> None:
    result = run_cli("simulate", "--runs", "5", "-o", "-")
    assert result.returncode == 0
    assert all(json.loads(line)["type"] for line in result.stdout.splitlines())
    gz = tmp_path / "fleet.jsonl.gz"
    assert run_cli("simulate", "--runs", "5", "-o", str(gz)).returncode == 0
    assert gz.read_bytes()[:2] == b"\x1f\x8b"


def test_tree_reads_the_otlp_fleet_as_the_v1_one(tmp_path: Path) -> None:
    v1, otlp = tmp_path / "fleet.jsonl", tmp_path / "spans.otlp.jsonl"
    args = ["--runs", "40", "--seed", "9", "--window", "1h"]
    assert run_cli("simulate", *args, "-o", str(v1)).returncode == 0
    made = run_cli("simulate", *args, "--format", "otlp", "-o", str(otlp))
    assert made.returncode == 0 and "OTLP spans" in made.stderr
    from_v1, from_otlp = run_cli("tree", str(v1)), run_cli("tree", str(otlp))
    assert from_v1.returncode == 0 and from_otlp.returncode == 0
    assert from_otlp.stdout == from_v1.stdout  # the trees, and why the runs ended as they did
    lines = from_v1.stdout.splitlines()
    assert sum(line.startswith("run ") and ": outcome " not in line for line in lines) == 40
    assert any(line.startswith("run ") and ": outcome failed:" in line for line in lines)


def test_simulate_refuses_bad_options(tmp_path: Path) -> None:
    cases = [
        (["--format", "csv"], "Invalid value for '--format'"),
        (["--window", "soon"], "Error: 'soon' is not a duration"),
        (["--failure-rate", "0.9", "--recursion-rate", "0.5"], "add up to at most 1"),
        (["--start", "yesterday"], "neither milliseconds nor an RFC 3339 time"),
        (["-o", str(tmp_path / "no" / "dir.jsonl")], "cannot write"),
    ]
    for args, message in cases:
        result = run_cli("simulate", "--runs", "1", *args)
        assert result.returncode == 2, args
        assert message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
