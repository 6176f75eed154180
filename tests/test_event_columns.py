"""Typed records as ``events`` columns: the same as DuckDB's parse of their v1 text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit.events import (
    EdgeInfo,
    Enter,
    ErrorInfo,
    Event,
    Exit,
    Node,
    RunEnd,
    RunStart,
    Usage,
    encode_event,
)
from tracekit.store.db import connect
from tracekit.store.event_columns import COLUMNS
from tracekit.store.load import load_batch, load_records
from tracekit.store.sources import text_table

NAMES = st.text(min_size=1, max_size=6)
MAYBE = st.none() | NAMES
TS = st.floats(min_value=0, max_value=4e12, allow_nan=False) | st.integers(0, 4 * 10**12)
MS = st.none() | st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)
SEQ = st.none() | st.integers(-(2**40), 2**40)
OK = st.none() | st.booleans()
ERROR = st.none() | st.builds(ErrorInfo, code=NAMES, message=st.text(max_size=5))
USAGE = st.none() | st.builds(Usage, inputTokens=st.none() | st.integers(0, 99))
STATUS = st.none() | st.sampled_from(["ok", "error", "refused", "cancelled", "pending"])
COMMON: dict[str, Any] = {"ts": TS, "seq": SEQ, "service": MAYBE, "traceId": MAYBE}
RECORDS = st.one_of(
    st.builds(Enter, invocationId=NAMES, runId=NAMES, parentRunId=MAYBE, agent=NAMES, node=MAYBE,
              kind=st.sampled_from(["delegate", "handoff", "subagent"]),
              edge=st.none() | st.builds(EdgeInfo, source=NAMES), **COMMON),
    st.builds(Exit, invocationId=NAMES, runId=NAMES, parentRunId=MAYBE, agent=NAMES, node=MAYBE,
              ok=OK, durationMs=MS, status=STATUS, error=ERROR, usage=USAGE, **COMMON),
    st.builds(Node, runId=NAMES, id=NAMES, ok=OK, durationMs=MS, error=ERROR,
              call=st.none() | st.sampled_from(["tool", "llm"]), **COMMON),
    st.builds(RunStart, runId=NAMES, agent=NAMES, session=MAYBE, **COMMON),
    st.builds(RunEnd, runId=NAMES, ok=st.booleans(), durationMs=MS, error=ERROR,
              failure=st.none() | st.sampled_from(["delegation", "agent"]), **COMMON),
)  # fmt: skip
_COLUMNS = "event_key, key_hash, ingest_id, source, line, item, " + ", ".join(
    name for name, _ in COLUMNS
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """Two stores: one loads the records' text as lines, the other the records."""
    folder = tmp_path_factory.mktemp("columns")
    return connect(folder / "text.duckdb"), connect(folder / "typed.duckdb")


def _events(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    rows = con.execute(f"SELECT {_COLUMNS}, raw FROM events ORDER BY line, item").fetchall()
    rejects = con.execute("SELECT line, raw, reason FROM rejects ORDER BY line").fetchall()
    con.execute("DELETE FROM events")
    con.execute("DELETE FROM rejects")
    return [*rows, *rejects]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RECORDS, min_size=1, max_size=12))
def test_the_columns_of_a_record_are_those_of_its_text_parsed(
    stores: tuple[Any, Any], records: list[Event]
) -> None:
    text, typed = stores
    texts = [encode_event(r).decode() for r in records]
    lines = list(range(1, len(texts) + 1))
    a = load_batch(text, text_table(lines, [0] * len(texts), texts, texts), [], ingest_id=1,
                   source="f")  # fmt: skip
    b = load_records(typed, [(n, 0, r) for n, r in zip(lines, records, strict=True)],
                     ingest_id=1, source="f")  # fmt: skip
    assert (a.read, a.accepted, a.rejected, a.duplicates) == (
        b.read, b.accepted, b.rejected, b.duplicates,
    )  # fmt: skip
    assert _events(typed) == _events(text)


def test_a_record_no_line_could_be_is_refused_in_a_lines_words(tmp_path: Path) -> None:
    good = RunStart(ts=5.0, runId="r", agent="a")
    bad = RunStart(ts=5.0, runId="r2", agent="")  # an empty id: no line may carry it
    con = connect(tmp_path / "s.duckdb")
    counts = load_records(con, [(1, 0, good), (2, 0, bad)], ingest_id=1, source="f")
    assert (counts.read, counts.accepted, counts.rejected, counts.duplicates) == (2, 1, 1, 0)
    text = encode_event(bad).decode()
    other = connect(tmp_path / "t.duckdb")
    load_batch(other, text_table([2], [0], [text], [text]), [], ingest_id=1, source="f")
    expected = other.execute("SELECT line, raw, reason FROM rejects").fetchall()
    assert con.execute("SELECT line, raw, reason FROM rejects").fetchall() == expected


@pytest.mark.parametrize("copies", [1, 2])
def test_records_stored_already_are_duplicates(tmp_path: Path, copies: int) -> None:
    con = connect(tmp_path / "s.duckdb")
    record = Node(ts=1.5, runId="r", id="n", seq=3)
    load_records(con, [(1, 0, record)] * copies, ingest_id=1, source="f")
    again = load_records(con, [(9, 0, record)], ingest_id=2, source="f")
    assert (again.accepted, again.duplicates) == (0, 1)
    assert con.execute("SELECT count(*), min(line) FROM events").fetchall() == [(1, 1)]
