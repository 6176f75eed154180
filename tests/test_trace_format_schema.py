"""docs/trace-format.schema.json: every sample line is valid, and it refuses what the reader refuses."""

from __future__ import annotations

import json

import jsonschema
import pytest
from _tree_helpers import ROOT, SAMPLES

from tracekit.events import decode_event

SCHEMA = json.loads((ROOT / "docs" / "trace-format.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def sample_lines() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(SAMPLES.glob("*.jsonl")):
        text = path.read_text()
        lines = text.splitlines()
        if not text.endswith("\n"):
            lines = lines[:-1]  # crashed_run's last line is cut in half on purpose
        found += [(path.name, number, line) for number, line in enumerate(lines, 1)]
    return found


def test_the_schema_is_a_valid_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(("name", "number", "line"), sample_lines())
def test_every_sample_line_is_valid(name: str, number: int, line: str) -> None:
    errors = [e.message for e in VALIDATOR.iter_errors(json.loads(line))]
    assert errors == [], f"{name}:{number}"
    decode_event(line)  # and the reader agrees


@pytest.mark.parametrize(
    "record",
    [
        {"type": "enter", "ts": 1, "runId": "r", "agent": "a"},  # no invocationId
        {"type": "node", "ts": 1, "runId": 2, "id": "x"},
        {"type": "exit", "ts": 1, "invocationId": "i", "runId": "r", "agent": "a", "status": "odd"},
        {"type": "nope", "ts": 1},
        {"type": "node", "runId": "r", "id": "x"},  # no ts
    ],
)
def test_the_schema_and_the_reader_both_refuse(record: dict) -> None:
    assert list(VALIDATOR.iter_errors(record))
    with pytest.raises(ValueError):
        decode_event(json.dumps(record))


def test_unknown_fields_are_kept_not_refused() -> None:
    record = {"type": "node", "ts": 1, "runId": "r", "id": "x", "future": {"a": 1}}
    assert not list(VALIDATOR.iter_errors(record))
    decode_event(json.dumps(record))
