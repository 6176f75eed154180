"""One rule for the message of a run's origin: a trace file's tree and the store say the same text.

``tracekit tree FILE`` reads the origin's message from the records' ``ErrorInfo``
(:mod:`tracekit.failures.cause`); ``tree RUN --db`` and the run page from the
store's JSON column (:mod:`tracekit.store.cause`). Both go through
:func:`tracekit.tree.outcome.origin_message`; these tests hold the two paths to
the same text on the same errors, a structured status message among them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests._store_helpers import line, write
from tracekit import Store
from tracekit.events import ErrorInfo, decode_error, decode_event, encode_event
from tracekit.failures.cause import run_causes
from tracekit.tree import build_forest
from tracekit.tree.outcome import RootCause, describe_cause, origin_message

STRUCTURED = "{'message': 'Max turns exceeded', 'data': {'max_turns': 5}}"
RECORDINGS = Path(__file__).parent / "frameworks" / "recordings"


def _failed_run(error: dict[str, Any], run_error: dict[str, Any] | None = None) -> list[str]:
    """desk delegates to billing, which fails with ``error``; the run ends failed with it wrapped."""
    edge = {"invocationId": "i1", "runId": "r/c", "parentRunId": "r", "agent": "billing"}
    wrapped = run_error or {"code": "AGENT_FAILED", "message": "billing failed", "cause": error}
    return [
        line({"type": "run.start", "ts": 1, "runId": "r", "agent": "desk", "service": "svc"}),
        line({"type": "enter", "ts": 2, **edge, "node": "hand_over", "service": "svc"}),
        line({"type": "node", "ts": 3, "runId": "r/c", "id": "charge"}),
        line({"type": "exit", "ts": 4, **edge, "node": "hand_over", "ok": False, "error": error}),
        line({"type": "run.end", "ts": 5, "runId": "r", "ok": False, "error": wrapped}),
    ]


CASES = {
    "structured": _failed_run({"code": "MaxTurnsExceeded", "message": STRUCTURED}),
    "wrapped-cause": _failed_run(
        {
            "code": "ToolFailed",
            "message": "charge failed",
            "cause": {"code": "CardDeclined", "message": STRUCTURED},
        }
    ),
    "empty-message": _failed_run(
        {"code": "Boom", "message": ""},
        {"code": "AGENT_FAILED", "message": "the run's own words"},
    ),
    "plain": _failed_run({"code": "Timeout", "message": "refunds API did not answer in 3s"}),
}


def _file_cause(trace: Path) -> RootCause:
    records = [decode_event(text) for text in trace.read_text().splitlines()]
    return run_causes(build_forest(records), records)["r"]


def _store_cause(trace: Path, db: Path) -> RootCause | None:
    with Store(db) as store:
        store.ingest(trace)
        return store.root_cause("r")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_store_and_the_file_give_the_same_origin_message(name: str, tmp_path: Path) -> None:
    trace = write(tmp_path / f"{name}.jsonl", CASES[name])
    from_file = _file_cause(trace)
    from_store = _store_cause(trace, tmp_path / "s.duckdb")
    assert from_store == from_file
    assert from_file.message, from_file  # every case has something to say


def test_a_structured_status_message_is_said_whole_by_both() -> None:
    stored = (
        '{"code":"AGENT_FAILED","message":"x","cause":{"code":"MaxTurnsExceeded","message":%s}}'
    )
    as_json = stored % f'"{STRUCTURED}"'
    as_info = ErrorInfo(
        code="AGENT_FAILED",
        message="x",
        cause=ErrorInfo(code="MaxTurnsExceeded", message=STRUCTURED),
    )
    assert decode_error(as_json) == as_info
    said = origin_message(as_info, "MaxTurnsExceeded", None)
    assert said == origin_message(decode_error(as_json), "MaxTurnsExceeded", None) == STRUCTURED


def test_an_error_that_is_not_json_leaves_the_fallback() -> None:
    assert decode_error("MaxTurnsExceeded") is None
    assert origin_message(decode_error("{not json"), "Boom", "kept") == "kept"


def test_a_recorded_limit_says_the_same_through_the_store(tmp_path: Path) -> None:
    """The openai-agents loop-limit recording: the store's why is the golden file's."""
    folder = RECORDINGS / "openllmetry_openai_agents"
    why = (folder / "loop_limit.why.txt").read_text().splitlines()
    assert STRUCTURED in why[-1]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(folder / "loop_limit.otlp.json", format="otlp")
        run_ids = list(store.runs().run_id)
        said = [describe_cause(c) for r in run_ids if (c := store.root_cause(r)) is not None]
    assert why in said


def test_the_events_round_trip_keeps_a_structured_message() -> None:
    """What the store keeps of an exit's error is the record's, message and all."""
    text = _failed_run({"code": "MaxTurnsExceeded", "message": STRUCTURED})[3]
    event = decode_event(text)
    assert decode_event(encode_event(event)) == event
