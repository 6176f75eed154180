"""The set-based OTLP ingest gives the store the per-span path gives, table by table."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from _columns_helpers import ingest_both, spans_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit.intake import formats
from tracekit.intake.otlp.columns import decode_lines, map_spans
from tracekit.intake.sources import expand
from tracekit.store.db import connect
from tracekit.store.ingest import ingest_paths

ROOT = Path(__file__).resolve().parent.parent


def _is_otlp(path: Path) -> bool:
    return formats.detect(formats.sniff_source(expand([path])[0])) == "otlp"


# Every OTLP recording: the framework goldens, the samples and the tests' fixtures.
RECORDINGS = sorted(
    p
    for folder in (ROOT / "sample_traces", ROOT / "tests")
    for p in [*folder.rglob("*.jsonl"), *folder.rglob("*.json")]
    if not p.name.endswith(".tree.json") and _is_otlp(p)
)


def _same(tmp: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    per_span, columns, diff = ingest_both(tmp, source, monkeypatch)
    assert diff == []
    assert columns.totals == per_span.totals
    assert spans_line(columns) == spans_line(per_span)


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 50


def test_simulated_fleet_same_store_and_most_traces_set_based(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fleet.jsonl"
    subprocess.run(
        [
            str(Path(sys.executable).with_name("tracekit")),
            "simulate",
            "--format",
            "otlp",
            "--runs",
            "400",
            "--seed",
            "0",
            "--start",
            "2026-01-01T00:00:00Z",
            "-o",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    _same(tmp_path, path, monkeypatch)
    con = duckdb.connect()
    lines = [line for line in path.read_text().splitlines() if line]
    assert decode_lines(con, pa.table({"line": range(1, len(lines) + 1), "text": lines}))
    map_spans(con)
    taken, traces = con.execute(
        "SELECT (SELECT count(*) FROM _otlp_taken), count(DISTINCT trace) FROM _otlp_spans"
    ).fetchall()[0]
    assert taken > 0.6 * traces  # all but the traces with a failure or a span never ended


def test_plain_otel_fleet_same_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _otel_helpers import otel_trace

    path = tmp_path / "otel.jsonl"
    otel_trace(path, 150, seed=5)
    _same(tmp_path, path, monkeypatch)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_recordings_same_store(
    recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _same(tmp_path, recording, monkeypatch)


def test_a_bad_line_reads_the_file_per_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bad.jsonl"
    good = _doc([_agent("0" * 31 + "1", "00000000000000a1", "", "triage", 1, 9)])
    path.write_text(good + "\n{not json\n")
    per_span, columns, diff = ingest_both(tmp_path, path, monkeypatch)
    assert diff == []
    assert columns.totals.rejected == per_span.totals.rejected == 1
    assert columns.totals.accepted == per_span.totals.accepted == 2


# Generated traces: random trees of agents, tool steps, plain steps and
# delegations, some ended, some failed, over several lines.
def _kv(key: str, value: object) -> dict[str, object]:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _span(
    trace: str,
    span: str,
    parent: str,
    name: str,
    start: int,
    end: int | None,
    attrs: list[dict[str, object]],
    failed: bool = False,
) -> dict[str, object]:
    out: dict[str, object] = {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(start * 1_000_003),
        "attributes": attrs,
    }
    if end is not None:
        out["endTimeUnixNano"] = str(end * 1_000_003)
    if failed:
        out["status"] = {"code": 2, "message": "boom: it broke"}
    return out


def _agent(
    trace: str,
    span: str,
    parent: str,
    agent: str,
    start: int,
    end: int | None,
    usage: int | None = None,
    session: str | None = None,
) -> dict[str, object]:
    attrs = [_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", agent)]
    if usage is not None:
        attrs += [_kv("gen_ai.usage.input_tokens", usage), _kv("gen_ai.response.model", "m")]
    if session:
        attrs.append(_kv("gen_ai.conversation.id", session))
    return _span(trace, span, parent, f"invoke_agent {agent}", start, end, attrs)


def _doc(spans: list[dict[str, object]]) -> str:
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": [_kv("service.name", "svc")]},
                    "scopeSpans": [{"scope": {"name": "gen"}, "spans": spans}],
                }
            ]
        }
    )


_NAMES = ["think", "answer", "plan", "turn", "transfer_to_billing", "delegate", "chat"]
_TOOLS = ["lookup", "ask_sql", "transfer_to_billing", "spawn_subagent", "handoff", "search"]


def _trace(rng: random.Random, t: int) -> list[dict[str, object]]:
    trace = f"{t:032x}"
    ids = iter(f"{t:08x}{i:08x}" for i in range(1, 10_000))
    root = next(ids)
    spans = [
        _agent(
            trace,
            root,
            "",
            rng.choice(["a", "b", "c"]),
            10,
            500 if rng.random() > 0.05 else None,
            rng.choice([None, 5]),
            rng.choice([None, "s1"]),
        )
    ]
    todo = [(root, 10, 2)]
    while todo:
        parent, at, depth = todo.pop()
        for k in range(rng.randint(0, 3)):
            sid, start = next(ids), at + 1 + k * 10
            shape = rng.random()
            failed = rng.random() < 0.08
            if shape < 0.4:
                spans.append(
                    _span(trace, sid, parent, rng.choice(_NAMES), start, start + 5, [], failed)
                )
            elif shape < 0.7 or depth == 0:
                tool = rng.choice(_TOOLS)
                spans.append(
                    _span(
                        trace,
                        sid,
                        parent,
                        f"execute_tool {tool}",
                        start,
                        start + 5,
                        [
                            _kv("gen_ai.operation.name", "execute_tool"),
                            _kv("gen_ai.tool.name", tool),
                        ],
                        failed,
                    )
                )
            else:
                tool, child = next(ids) if False else rng.choice(_TOOLS), next(ids)
                spans.append(
                    _span(
                        trace,
                        sid,
                        parent,
                        f"execute_tool {tool}",
                        start,
                        start + 8,
                        [
                            _kv("gen_ai.operation.name", "execute_tool"),
                            _kv("gen_ai.tool.name", tool),
                        ],
                    )
                )
                spans.append(
                    _agent(
                        trace,
                        child,
                        sid,
                        rng.choice(["x", "y", "billing"]),
                        start + 1,
                        start + 7,
                        rng.choice([None, 3]),
                    )
                )
                todo.append((child, start + 1, depth - 1))
    return spans


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), traces=st.integers(1, 12), per_line=st.integers(1, 40))
def test_generated_traces_same_store(
    seed: int, traces: int, per_line: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rng = random.Random(seed)
    spans = [s for t in range(1, traces + 1) for s in _trace(rng, t)]
    rng.shuffle(spans)
    lines = [_doc(spans[i : i + per_line]) for i in range(0, len(spans), per_line)]
    tmp = tmp_path_factory.mktemp("gen")
    path = tmp / "gen.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same(tmp, path, monkeypatch)


def test_columns_path_takes_the_common_shapes(tmp_path: Path) -> None:
    """The set-based path is used: a store it wrote holds the same records, fewer Python calls aside."""
    path = tmp_path / "one.jsonl"
    trace = "0" * 31 + "7"
    path.write_text(
        _doc(
            [
                _agent(trace, "00000000000000a1", "", "triage", 1, 50, 4, "s"),
                _span(trace, "00000000000000b1", "00000000000000a1", "think", 2, 3, []),
            ]
        )
        + "\n"
    )
    con = connect(tmp_path / "s.duckdb")
    report = ingest_paths(con, [path])
    rows = con.execute("SELECT type, raw FROM events ORDER BY ts_ms, type").fetchall()
    con.close()
    assert report.totals.accepted == 3
    assert [r[0] for r in rows] == ["run.start", "node", "run.end"]
    assert '"usage":{"inputTokens":4,"models":["m"]}' in rows[2][1]
