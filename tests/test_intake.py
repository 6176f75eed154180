"""read_trace: paths, gzip by magic bytes, bad lines with file:line: reason, OTLP detection."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from _tree_helpers import SAMPLES, node, run_cli, write_jsonl

import tracekit.intake as intake
from tracekit import TraceFileError, TraceReadError, read_trace
from tracekit.events import Node
from tracekit.intake.jsonl import read_jsonl_lines
from tracekit.intake.lines import classify

GOOD = b'{"type":"node","ts":1,"runId":"r","id":"a"}\n'


def test_reads_every_record_in_file_order(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [node(2, "r", "b"), node(1, "r", "a")])
    result = read_trace(path)
    assert [e.id for e in result.events] == ["b", "a"]  # type: ignore[union-attr]
    assert (result.bad_lines, result.lines_read, result.format) == ([], 2, "jsonl")


def test_bad_lines_are_collected_with_file_line_and_reason(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD + b"not json\n" + b'{"type":"node","ts":1,"runId":2,"id":"x"}\n' + GOOD)
    result = read_trace(path)
    assert len(result.events) == 2
    assert result.lines_read == 4
    assert [str(e) for e in result.bad_lines] == [
        f"{path}:2: not JSON: JSON is malformed: invalid character (byte 4)",
        f"{path}:3: not a v1 record: Expected `str`, got `int` - at `$.runId`",
    ]
    assert result.bad_lines[0].text == "not json"


def test_truncated_last_line_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD + GOOD[:20])
    result = read_trace(path)
    assert len(result.events) == 1
    assert str(result.bad_lines[0]) == (
        f"{path}:2: truncated last line (not JSON: Input data was truncated)"
    )


def test_strict_raises_the_first_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD + b"{oops}\n" + b"also bad\n")
    with pytest.raises(TraceReadError) as info:
        read_trace(path, strict=True)
    assert (info.value.line, info.value.path) == (2, str(path))


def test_blank_lines_are_not_records(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD + b"\n   \n" + GOOD)
    result = read_trace(path)
    assert (len(result.events), result.bad_lines, result.lines_read) == (2, [], 2)


def test_two_objects_on_one_line_are_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD + GOOD.rstrip() + b" " + GOOD)
    result = read_trace(path)
    assert len(result.events) == 1
    assert result.bad_lines[0].line == 2


def test_rfc3339_times_are_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type":"node","ts":"1970-01-01T00:00:01Z","runId":"r","id":"a"}\n' + GOOD)
    assert [e.ts for e in read_trace(path).events] == [1000.0, 1.0]


def test_line_numbers_hold_across_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake, "_BLOCK", 100)  # several lines per block, cut mid-line
    path = tmp_path / "t.jsonl"
    lines = [GOOD] * 50
    lines[36] = b"broken\n"
    path.write_bytes(b"".join(lines))
    result = read_trace(path)
    assert len(result.events) == 49
    assert [e.line for e in result.bad_lines] == [37]


def test_gzip_is_found_by_its_magic_bytes_not_its_name(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"  # no .gz suffix
    path.write_bytes(gzip.compress((SAMPLES / "agent_orchestrator.jsonl").read_bytes()))
    plain = read_trace(SAMPLES / "agent_orchestrator.jsonl")
    assert read_trace(path).events == plain.events


def test_a_cut_gzip_keeps_what_came_before(tmp_path: Path) -> None:
    rng = random.Random(3)
    lines = [
        f'{{"type":"node","ts":{i},"runId":"r","id":"{rng.getrandbits(64):x}"}}\n'.encode()
        for i in range(20_000)
    ]
    data = gzip.compress(b"".join(lines))
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    result = read_trace(path)
    assert 0 < len(result.events) < 20_000
    assert result.lines_read == len(result.events) + len(result.bad_lines) - 1
    assert "gzip stream damaged" in str(result.bad_lines[-1])


def test_missing_file_is_a_trace_file_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError, match="no such file"):
        read_trace(tmp_path / "nope.jsonl")
    with pytest.raises(TraceFileError, match="is a directory"):
        read_trace(tmp_path)


def test_otlp_is_detected_by_content(tmp_path: Path) -> None:
    assert classify([b'{"resourceSpans":[]}']) == "otlp"
    assert classify([b"{", b'  "resourceSpans": []']) == "otlp-document"
    assert classify([b'{"resourceSpans": [', b"  {"]) == "otlp-document"
    assert classify([b"{", b'  "runs": []']) == "document"
    assert classify([GOOD]) == "jsonl"
    lines = tmp_path / "lines.json"
    lines.write_bytes(b'\n{"resourceSpans":[]}\n')
    pretty = tmp_path / "pretty.json"
    pretty.write_bytes(b'{\n  "resourceSpans": []\n}\n')
    for path in (lines, pretty):
        result = read_trace(path)
        assert (result.format, result.events, result.bad_lines) == ("otlp", [], [])


def test_line_reader_directly() -> None:
    result = read_jsonl_lines([GOOD, b"{"], "x.jsonl")
    assert isinstance(result.events[0], Node)
    assert str(result.bad_lines[0]).startswith("x.jsonl:2: truncated last line")


_DEEP = 20_000
_GOOD = b'{"type":"node","ts":1,"runId":"r","id":"a"}\n'


@pytest.mark.parametrize(
    "first",
    [
        b'{"a":' * _DEEP + b"1" + b"}" * _DEEP,
        b'{"resourceSpans":' + b"[" * _DEEP + b"]" * _DEEP + b"}",
        b"[" * _DEEP + b"]" * _DEEP,
    ],
    ids=["object", "otlp", "array"],
)
def test_a_first_line_nested_20000_deep_is_one_bad_line(tmp_path: Path, first: bytes) -> None:
    """Format detection never recurses out: the line is refused in one line, the rest read."""
    path = tmp_path / "deep.jsonl"
    path.write_bytes(first + b"\n" + _GOOD)
    assert classify([first, _GOOD]) in ("jsonl", "otlp")
    tree = run_cli("tree", str(path))
    ingest = run_cli("ingest", str(path), "--db", str(tmp_path / "t.duckdb"))
    for done in (tree, ingest):
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert f"{path}:1:" in tree.stderr or "(line 1:" in tree.stderr
    assert ingest.returncode == 0 and "2 read" in ingest.stdout
