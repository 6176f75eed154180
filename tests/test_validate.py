"""One validation: ``tracekit tree`` and ``tracekit ingest`` take and refuse the same lines.

The reproductions run the installed ``tracekit`` command on real files; the
property test writes generated lines (valid ones and subtly invalid ones) to a
file and checks that the tree reader and an ingest into a real store accept
exactly the same lines and reject the others for the same reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._store_helpers import cli, write
from tracekit import Store
from tracekit.intake import read_trace
from tracekit.validate import MAX_DEPTH, MAX_TS_MS

SAMPLE = Path(__file__).parent.parent / "sample_traces" / "child_failure.jsonl"


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _rejects(db: Path) -> list[tuple[int, str]]:
    with Store(db) as store:
        rows = store.con.execute("SELECT line, reason FROM rejects ORDER BY line").fetchall()
    return [(int(line), str(reason)) for line, reason in rows]


# -- the reproductions, through the installed command ---------------------------------


def test_a_ts_beyond_the_year_9999_is_rejected_and_the_store_keeps_working(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.duckdb"
    bad = write(tmp_path / "p.jsonl", ['{"type":"run.start","ts":1e16,"runId":"r","agent":"a"}\n'])
    done = cli("ingest", str(bad), db=db)
    assert "1 rejected" in done.stdout
    done = cli("ingest", str(SAMPLE), db=db)
    assert "10 accepted" in done.stdout
    assert [reason for _, reason in _rejects(db)] == [
        f"not a v1 record: Expected `float` <= {float(MAX_TS_MS)} - at `$.ts`"
    ]
    assert cli("runs", db=db).stdout.strip()


def test_an_otlp_end_time_of_1e26_ns_is_rejected_and_the_store_keeps_working(
    tmp_path: Path,
) -> None:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "invoke_agent triage",
        "startTimeUnixNano": "1000000",
        "endTimeUnixNano": str(10**26),
        "attributes": [{"key": "gen_ai.agent.name", "value": {"stringValue": "triage"}}],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    path = write(tmp_path / "o.jsonl", [_line(doc)])
    db = tmp_path / "s.duckdb"
    cli("ingest", str(path), db=db)
    cli("ingest", str(SAMPLE), db=db)
    (reason,) = [r for _, r in _rejects(db)]
    assert "endTimeUnixNano 100000000000000000000000000 is out of range" in reason
    tree = cli("tree", str(path), check=False)
    assert reason in tree.stderr and "Traceback" not in tree.stderr


def test_a_numeric_cause_code_is_rejected_by_ingest_as_by_tree(tmp_path: Path) -> None:
    record = {
        "type": "exit",
        "ts": 5,
        "invocationId": "i",
        "runId": "c",
        "parentRunId": "r",
        "agent": "a",
        "ok": False,
        "error": {"code": "AGENT_FAILED", "cause": {"code": 5}},
    }
    lines = [
        _line({"type": "run.start", "ts": 1, "runId": "r", "agent": "root"}),
        _line(record),
    ]
    path = write(tmp_path / "c.jsonl", lines)
    db = tmp_path / "s.duckdb"
    cli("ingest", str(path), db=db)
    reason = "not a v1 record: Expected `str`, got `int` - at `$.error.cause.code`"
    assert _rejects(db) == [(2, reason)]
    assert reason in cli("tree", str(path)).stderr
    assert "Traceback" not in cli("tree", "r", db=db).stderr


def test_attrs_nested_a_thousand_deep_are_one_bad_line(tmp_path: Path) -> None:
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    lines = [
        _line({"type": "run.start", "ts": 1, "runId": "r", "agent": "root"}),
        '{"type":"run.end","ts":2,"runId":"r","ok":true,"attrs":' + deep + "}\n",
    ]
    path = write(tmp_path / "d.jsonl", lines)
    tree = cli("tree", str(path))
    assert "d.jsonl:2: not a v1 record: nested deeper than 64 levels" in tree.stderr
    db = tmp_path / "s.duckdb"
    cli("ingest", str(path), db=db)
    assert [line for line, _ in _rejects(db)] == [2]


def test_an_unknown_field_nested_deep_is_refused_by_both_and_tree_db_reads_the_rest(
    tmp_path: Path,
) -> None:
    # msgspec skips a key it does not read, but a thousand levels are a RecursionError
    # (refused as too deep); the store took such a line, and tree --db could not read it.
    deep = "[" * 2000 + "]" * 2000
    lines = [
        _line({"type": "run.start", "ts": 1, "runId": "r", "agent": "root"}),
        '{"type":"node","ts":2,"runId":"r","id":"a","zz":' + deep + "}\n",
        '{"type":"node","ts":3,"runId":"r","id":"b","error":' + deep + "}\n",
        '{"type":"run.end","ts":4,"runId":"r","ok":false,"error":{"code":"X","zz":' + deep + "}}\n",
        _line({"type": "node", "ts": 5, "runId": "r", "id": "c"}),
    ]
    path = write(tmp_path / "u.jsonl", lines)
    tree = cli("tree", str(path))
    refused = [line for line in tree.stderr.splitlines() if "u.jsonl:" in line]
    assert [r.split("u.jsonl:")[1].split(":")[0] for r in refused] == ["2", "3", "4"]
    db = tmp_path / "s.duckdb"
    cli("ingest", str(path), db=db)
    assert [line for line, _ in _rejects(db)] == [2, 3, 4]
    # The store's tree is the file's, and so is the why: a run with no end is incomplete.
    why = "outcome incomplete: no end was seen (crashed, or still running)\n"
    assert tree.stdout == "c\n" + why
    assert cli("tree", "r", db=db).stdout == "c\n" + why


def test_an_otlp_array_value_nested_3000_deep_is_one_bad_line(tmp_path: Path) -> None:
    def doc(span_id: str, value: str) -> str:
        return (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":'
            f'"0af7651916cd43dd8448eb211c80319c","spanId":"{span_id}","name":"invoke_agent a",'
            '"startTimeUnixNano":"1000000","endTimeUnixNano":"5000000","attributes":['
            f'{{"key":"gen_ai.agent.name","value":{value}}}]}}]}}]}}]}}\n'
        )

    deep = '{"arrayValue":{"values":[' * 3000 + '{"stringValue":"x"}' + "]}}" * 3000
    path = write(
        tmp_path / "o.jsonl",
        [doc("b7ad6b7169203331", '{"stringValue":"a"}'), doc("b7ad6b7169203332", deep)],
    )
    reason = f"not OTLP JSON: an attribute value nests deeper than {MAX_DEPTH} levels"
    assert f"o.jsonl:2: {reason}" in cli("tree", str(path)).stderr
    db = tmp_path / "s.duckdb"
    cli("ingest", str(path), db=db)
    assert _rejects(db) == [(2, reason)]


def test_a_seq_of_2_to_the_70_and_empty_ids_are_rejected_by_both(tmp_path: Path) -> None:
    lines = [
        '{"type":"node","ts":5,"runId":"r","id":"x","seq":1180591620717411303424}\n',
        _line({"type": "node", "ts": 5, "runId": "", "id": "y"}),
        _line({"type": "node", "ts": 5, "runId": "r", "id": "z"}),
    ]
    path = write(tmp_path / "n.jsonl", lines)
    db = tmp_path / "s.duckdb"
    cli("ingest", str(path), db=db)
    got = _rejects(db)
    assert [line for line, _ in got] == [1, 2]
    tree = cli("tree", str(path)).stderr
    for line, reason in got:
        assert f"n.jsonl:{line}: {reason}" in tree


# -- the property: one set of rules --------------------------------------------------

_RAW = "\x00raw{}\x00"  # a placeholder for a token json.dumps cannot write


def _ids(n: int) -> dict[str, dict[str, Any]]:
    base = {"ts": 1000 + n}
    inv = {"invocationId": f"i{n}", "runId": f"c{n}", "parentRunId": "r", "agent": "a"}
    return {
        "enter": {**base, **inv, "kind": "delegate"},
        "exit": {**base, **inv, "ok": False, "error": {"code": "AGENT_FAILED"}},
        "node": {**base, "runId": "r", "id": f"n{n}", "durationMs": 3},
        "run.start": {**base, "runId": f"r{n}", "agent": "a"},
        "run.end": {**base, "runId": f"r{n}", "ok": True, "durationMs": 7},
    }


_ODD_VALUES = st.sampled_from(
    [
        "",
        "x",
        0,
        -1,
        -0.0,
        1e16,
        2**63,
        2**63 - 1,
        2**70,
        MAX_TS_MS,
        MAX_TS_MS + 1,
        1.5,
        True,
        None,
        [],
        {},
        ["a", 1],
        {"code": 5},
        {"code": "E", "cause": {"code": 5}},
        {"code": "E", "chain": ["a", 2]},
        {"code": "E", "chain": ["a", "b", "a"], "cause": {"code": "F", "message": "m"}},
        _nested(MAX_DEPTH - 1),
        _nested(MAX_DEPTH),
        _nested(MAX_DEPTH + 1),
        _nested(900),
        _RAW.format("NaN"),
        _RAW.format("-Infinity"),
        _RAW.format("1e400"),
        _RAW.format("1" + "0" * 400),
        {"inputTokens": 5, "outputTokens": 2, "models": ["m"]},
        {"inputTokens": -1},
        {"outputTokens": 1.5},
        {"models": ["a", 1]},
        {"inputTokens": 1, "x": _nested(900)},
    ]
)
_FIELDS = st.sampled_from(
    [
        *("ts", "seq", "runId", "id", "agent", "invocationId", "parentRunId", "node"),
        *("durationMs", "ok", "status", "kind", "error", "attrs", "traceId", "type"),
        *("usage", "session"),
    ]
)


@st.composite
def _record_line(draw: st.DrawFn, n: int) -> str:
    kind = draw(st.sampled_from(["enter", "exit", "node", "run.start", "run.end"]))
    record: dict[str, Any] = {"type": kind, **_ids(n)[kind]}
    for _ in range(draw(st.integers(0, 2))):
        record[draw(_FIELDS)] = draw(_ODD_VALUES)
    text = json.dumps(record, separators=(",", ":"))
    for token in ("NaN", "-Infinity", "1e400", "1" + "0" * 400):
        text = text.replace(json.dumps(_RAW.format(token)), token)
    tricks = [
        "",
        "trailing comma",
        "duplicate ts",
        "duplicate type",
        "duplicate in usage",
        "spaced",
    ]
    trick = draw(st.sampled_from(tricks))
    if trick == "trailing comma":
        text = text[:-1] + ",}"
    elif trick == "duplicate ts":
        text = text[:-1] + ',"ts":1e16}'
    elif trick == "duplicate type":
        text = '{"type":"node",' + text[1:]
    elif trick == "duplicate in usage":
        text = text.replace('"usage":{"inputTokens":5', '"usage":{"inputTokens":-1,"inputTokens":5')
    elif trick == "spaced":  # not a plain line: the full checks, not the key count
        text = text.replace('":', '": ').replace(",}", ", }")
    return text + "\n"


@st.composite
def _files(draw: st.DrawFn) -> list[str]:
    # A first line that is no record makes ingest take the file for another
    # format (a choice of its own, not a rule of the record): start with a good one.
    first = _line({"type": "run.start", "ts": 1, "runId": "r", "agent": "root"})
    count = draw(st.integers(1, 12))
    return [first] + [draw(_record_line(n)) for n in range(count)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_files())
def test_tree_and_ingest_accept_and_reject_the_same_lines(
    tmp_path_factory: Any, lines: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    path = write(folder / "t.jsonl", lines)
    tree = {error.line: error.reason for error in read_trace(path).bad_lines}
    with Store(folder / "s.duckdb") as store:
        store.ingest([path])
        stored = {r[0] for r in store.con.execute("SELECT line FROM events").fetchall()}
        for (run_id,) in store.con.execute("SELECT run_id FROM runs").fetchall():
            store.tree(run_id)  # whatever passed derives and reads back
    assert dict(_rejects(folder / "s.duckdb")) == tree
    assert stored == set(range(1, len(lines) + 1)) - set(tree)
