"""The format registry: one vocabulary for every command, and every reader refuses a bad first line."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tree_helpers import run_cli

from tracekit.cli.app import IngestFormat
from tracekit.intake import formats, read_trace

GOOD = b'{"type":"enter","ts":1,"runId":"r","agent":"a","invocationId":"i"}\n'
OTLP = b'{"resourceSpans":[]}\n'
DEEP = b"[" * 20_000 + b"]" * 20_000 + b"\n"


def test_ingest_offers_the_registry_s_names() -> None:
    assert tuple(IngestFormat) == (formats.AUTO, *formats.names())


def test_an_alias_is_its_format_and_an_unknown_name_says_the_choices() -> None:
    assert formats.canonical("jsonl") == formats.canonical("tracekit") == "tracekit"
    with pytest.raises(formats.TracekitError, match="auto, tracekit, otlp"):
        formats.canonical("yaml")


@pytest.mark.parametrize("name", [formats.AUTO, *formats.names()])
def test_every_reader_refuses_a_first_line_nested_20000_deep_in_one_line(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(DEEP + (OTLP if name == "otlp" else GOOD))
    result = read_trace(path, format=name)  # type: ignore[arg-type]
    assert [e.line for e in result.bad_lines] == [1]
    out = run_cli("ingest", "--db", str(tmp_path / "t.duckdb"), "--format", name, str(path))
    assert "Traceback" not in out.stderr and "RecursionError" not in out.stdout + out.stderr
    assert " 1 rejected" in out.stdout and "Error" not in out.stderr, out.stdout + out.stderr
