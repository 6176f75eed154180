"""One trace assembler: any split and order of a trace's spans gives one tree, and every span counts."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
from _server_helpers import simulate_otlp
from _tree_helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit.events import Enter, Node, RunStart, encode_event
from tracekit.intake import read_trace
from tracekit.intake.assemble import TraceAssembler
from tracekit.intake.otlp.decode_json import Span

RECORDINGS = sorted((Path(__file__).parent / "frameworks" / "recordings").rglob("*.otlp.json"))
Piece = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]  # resource, scope, span


def _pieces(path: Path) -> list[Piece]:
    """Every span of a file with the resource and scope it came under."""
    found: list[Piece] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    found.append((resource.get("resource", {}), scope.get("scope", {}), span))
    return found


def _line(pieces: list[Piece]) -> str:
    groups = [
        {"resource": res, "scopeSpans": [{"scope": scope, "spans": [span]}]}
        for res, scope, span in pieces
    ]
    return json.dumps({"resourceSpans": groups})


def _write(path: Path, pieces: list[Piece], cuts: list[int]) -> Path:
    bounds = [0, *sorted(set(cuts)), len(pieces)]
    lines = [_line(pieces[a:b]) for a, b in itertools.pairwise(bounds) if b > a]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _tree(path: Path) -> tuple[list[bytes], Any]:
    result = read_trace(path)
    return sorted(encode_event(e) for e in result.events), result.spans


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_span_of_a_recording_is_counted_once(recording: Path) -> None:
    result = read_trace(recording)
    assert result.spans is not None
    distinct = {(s["traceId"], s["spanId"]) for _, _, s in _pieces(recording)}
    assert result.spans.read == len(distinct)
    runs = sum(isinstance(e, (RunStart, Enter)) for e in result.events)
    assert result.spans.agents == runs
    assert result.spans.steps >= sum(isinstance(e, Node) for e in result.events)
    assert result.spans.refused == 0


def test_every_span_of_a_simulated_fleet_is_counted_once(tmp_path: Path) -> None:
    docs = simulate_otlp(tmp_path / "fleet.otlp.jsonl", runs=30)
    spans = {
        (s["traceId"], s["spanId"])
        for d in docs
        for r in d["resourceSpans"]
        for sc in r["scopeSpans"]
        for s in sc["spans"]
    }
    result = read_trace(tmp_path / "fleet.otlp.jsonl")
    assert result.spans is not None and result.spans.read == len(spans)
    assert result.spans.agents == sum(isinstance(e, (RunStart, Enter)) for e in result.events)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_split_and_order_of_the_spans_gives_the_same_tree(tmp_path: Path, data: Any) -> None:
    recording = data.draw(st.sampled_from(RECORDINGS))
    pieces = _pieces(recording)
    expected = _tree(recording)
    order = data.draw(st.permutations(range(len(pieces))))
    cuts = data.draw(st.lists(st.integers(0, len(pieces)), max_size=len(pieces)))
    shuffled = _write(tmp_path / "split.otlp.jsonl", [pieces[i] for i in order], cuts)
    assert _tree(shuffled) == expected


def _stored(db: Path, *paths: Path) -> tuple[list[str], int]:
    """The records one ``tracekit ingest`` of ``paths`` stored, and the spans its counts lines read."""
    result = run_cli("ingest", "--db", str(db), *map(str, paths))
    assert result.returncode == 0, result.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        raws = [raw for (raw,) in con.execute("SELECT raw FROM events ORDER BY raw").fetchall()]
    spans = sum(int(n.replace(",", "")) for n in re.findall(r"([\d,]+) spans? read", result.stdout))
    return raws, spans


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_split_of_the_spans_over_files_of_one_ingest_gives_the_same_runs(
    tmp_path: Path, data: Any
) -> None:
    recording = data.draw(st.sampled_from(RECORDINGS))
    pieces = _pieces(recording)
    case = tmp_path / str(data.draw(st.uuids()))
    case.mkdir()
    expected, spans = _stored(case / "whole.duckdb", recording)
    order = data.draw(st.permutations(range(len(pieces))))
    files = data.draw(st.lists(st.integers(0, 3), min_size=len(pieces), max_size=len(pieces)))
    paths = []
    for number in sorted(set(files)):
        mine = [pieces[i] for i, f in zip(order, files, strict=True) if f == number]
        paths.append(_write(case / f"part{number}.otlp.jsonl", mine, [1, len(mine) // 2]))
    assert _stored(case / "split.duckdb", *paths) == (expected, spans)


def test_a_span_that_comes_after_its_trace_was_mapped_joins_it(tmp_path: Path) -> None:
    """Past the settle (64 lines) the trace is mapped; a late span reopens it, records once."""
    recording = next(p for p in RECORDINGS if p.parent.name == "openai_agents")
    pieces = _pieces(recording)
    late = next(i for i, p in enumerate(pieces) if p[2].get("parentSpanId"))
    rest = pieces[:late] + pieces[late + 1 :]
    noise = {"name": "noise", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    filler = [
        _line([({}, {}, {**noise, "traceId": f"{n:032x}", "spanId": f"{n:016x}"})])
        for n in range(1, 81)
    ]
    path = tmp_path / "late.otlp.jsonl"
    path.write_text("".join(x + "\n" for x in [_line(rest), *filler, _line([pieces[late]])]))
    events, counts = _tree(path)
    whole, _ = _tree(recording)
    keys = [_key(e) for e in events]
    # The late span joined its trace: every record of the whole trace is there
    # (the earlier ones as first given), and none is given twice.
    assert {_key(e) for e in whole} <= set(keys)
    assert len(keys) == len(set(keys))
    assert counts.read == len(pieces) + len(filler)


def _key(encoded: bytes) -> tuple[Any, ...]:
    """A record's identity, as the store keys it."""
    e = json.loads(encoded)
    return (
        e["type"],
        e["runId"],
        e.get("invocationId"),
        e.get("id"),
        e.get("ts") if e["type"] == "node" else None,
    )


@pytest.mark.parametrize("failing", [2, 3], ids=["the-step", "a-span-folded-into-it"])
def test_a_trace_without_an_agent_span_is_a_run_of_its_own(tmp_path: Path, failing: int) -> None:
    """Plain OpenTelemetry: a run named after its top span; an ERROR span always shows."""
    trace = "ab" * 16

    def span(i: int, parent: int | None, name: str, **extra: Any) -> dict[str, Any]:
        return {"traceId": trace, "spanId": f"{i:016x}", "name": name,
                "parentSpanId": f"{parent:016x}" if parent else "",
                "startTimeUnixNano": str(1_000_000 * i), "endTimeUnixNano": "90000000", **extra}  # fmt: skip

    boom = {"status": {"code": 2, "message": "boom"}}
    spans = [
        span(1, None, "GET /chat"),
        span(2, 1, "lookup", **(boom if failing == 2 else {})),
        span(3, 2, "db query", **(boom if failing == 3 else {})),
    ]
    service = {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]}
    path = tmp_path / "plain.otlp.jsonl"
    doc = {"resourceSpans": [{"resource": service, "scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n")
    result = read_trace(path)
    starts = [e for e in result.events if isinstance(e, RunStart)]
    assert [s.agent for s in starts] == ["shop GET /chat"]
    errors = run_cli("tree", "--errors", str(path))
    assert errors.returncode == 0 and "lookup (error)" in errors.stdout
    counts, note = errors.stderr.strip().splitlines()[-2:]
    assert counts == "3 spans read = 1 agent + 1 step + 1 wrapper + 0 rejected"
    assert note.startswith("1 trace has spans but no recognised agent") and "--dialect" in note


def test_traces_joined_by_a_span_link_are_mapped_together() -> None:
    """A runtime that starts each agent turn in a new trace links it to the turn before."""
    from tracekit.intake.assemble import TraceAssembler
    from tracekit.intake.otlp.decode_json import Span

    def span(trace: str, i: str, parent: str = "", links: tuple = (), end: int | None = 2) -> Span:
        return Span(trace, i, parent, i, 1, end, {}, False, "", None, links=links)

    assembler = TraceAssembler(settle=2)
    assembler.add([span("A", "a")], position=1, now=0)
    assembler.add([span("B", "b", links=(("A", "a"),), end=None)], position=2, now=1)
    assert assembler.ready(now=3) == []  # A is settled, but B (linked to it) is not: wait
    assembler.add([span("B", "b", links=(("A", "a"),))], position=3, now=3)
    assert assembler.ready(now=5) == ["A", "B"]
    assert sorted(assembler.take(["A", "B"])) == [("A", "a"), ("B", "b")]


_ADDS = st.lists(
    st.tuples(st.integers(0, 5), st.booleans(), st.integers(0, 3), st.booleans()), max_size=40
)


@given(adds=_ADDS, forward=st.booleans(), settle=st.integers(1, 4))
def test_ready_answers_as_a_walk_over_every_rooted_trace_in_rooting_order(
    adds: list[tuple[int, bool, int, bool]], forward: bool, settle: int
) -> None:
    """Ready traces are found without walking all of them, yet the answer is the walk's.

    Ticks go forward (a file's lines) or anywhere (a clock set back); a trace's
    root comes at any point; ready traces are taken or left held.
    """
    assembler = TraceAssembler(settle=settle)
    seen: dict[str, int] = {}
    rooted: list[str] = []  # in the order their roots came
    tick = 0
    for n, (which, root, step, take) in enumerate(adds):
        tick = tick + step if forward else step
        trace = f"t{which}"
        span = Span(
            trace, "r" if root else f"s{n}", "" if root else "r", "x", 1, 2, {}, False, "", None
        )
        assembler.add([span], position=n, now=tick)
        seen[trace] = tick
        if root and trace not in rooted:
            rooted.append(trace)
        now = tick + settle - 1 + step % 2
        expected = [t for t in rooted if now - seen[t] >= settle]
        assert assembler.ready(now=now) == expected
        if take:
            assembler.take(expected)
            rooted = [t for t in rooted if t not in expected]
            seen = {t: s for t, s in seen.items() if t not in expected}
