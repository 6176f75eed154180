"""Ingest: every line accounted for, nothing lost, nothing twice."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from tests._store_helpers import fleet, line, run_lines, write
from tracekit import Store
from tracekit.store import sources
from tracekit.store.ingest import ingest_paths


def counts(store: Store) -> tuple[int, int, int]:
    row = store.sql(
        "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM invocations),"
        " (SELECT count(*) FROM runs)"
    ).iloc[0]
    return int(row.iloc[0]), int(row.iloc[1]), int(row.iloc[2])


def test_a_fleet_ingests_into_runs_and_invocations(tmp_path: Path) -> None:
    trace = write(tmp_path / "fleet.jsonl", fleet(9))
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(trace)
        assert report.reconciliation() == (
            "ingested 1 source: 54 lines read = 54 accepted + 0 rejected + 0 duplicates"
        )
        runs = store.runs()
        assert len(runs) == 9
        assert sorted(runs.status.unique()) == ["error", "ok"]
        inv = store.invocations("r1")
        row = inv.iloc[0]
        assert (row.root_run_id, row.parent_run_id, row.depth) == ("r1", "r1", 1)
        assert (row.agent, row.node, row.status, row.duration_ms) == (
            "billing",
            "hand_over",
            "ok",
            3,
        )
        assert row.has_enter and row.has_exit
        failed = store.invocations("r0").iloc[0]
        assert (failed.status, failed.error_code, failed.error_message) == (
            "error",
            "BOOM",
            "it broke",
        )
        assert set(store.runs(status="error").run_id) == {"r0", "r3", "r6"}
        steps = store.sql("SELECT step_id, name FROM steps WHERE run_id = 'r1/c'")
        assert steps.values.tolist() == [["hand_over/billing/sort", "sort"]]


def test_reingesting_the_same_file_adds_nothing(tmp_path: Path) -> None:
    trace = write(tmp_path / "fleet.jsonl", fleet(4))
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(trace)
        before = counts(store)
        again = store.ingest(trace)
        assert again.reconciliation() == (
            "ingested 1 source: 0 lines read = 0 accepted + 0 rejected + 0 duplicates"
        )
        assert again.sources[0].unchanged
        assert counts(store) == before


def test_a_grown_file_is_read_from_its_last_complete_line(tmp_path: Path) -> None:
    lines = fleet(4)
    trace = write(tmp_path / "live.jsonl", lines[:10])
    with Store(tmp_path / "s.duckdb") as store:
        first = store.ingest(trace)
        assert first.totals.read == 10
        with trace.open("a") as fh:
            fh.write("".join(lines[10:]))
        second = store.ingest(trace)
        assert second.reconciliation() == (
            "ingested 1 source: 14 lines read = 14 accepted + 0 rejected + 0 duplicates"
        )
        log = store.ingest_log()
        assert log.first_line.tolist() == [1, 11]
        assert counts(store) == (24, 4, 4)


def test_a_line_still_being_written_waits_for_the_next_ingest(tmp_path: Path) -> None:
    lines = run_lines("r1")
    trace = tmp_path / "live.jsonl"
    trace.write_text("".join(lines[:3]) + lines[3][:20])
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(trace)
        assert report.reconciliation() == (
            "ingested 1 source: 3 lines read = 3 accepted + 0 rejected + 0 duplicates"
            " (1 incomplete last line left for the next ingest)"
        )
        with trace.open("a") as fh:
            fh.write(lines[3][20:] + "".join(lines[4:]))
        report = store.ingest(trace)
        assert report.reconciliation() == (
            "ingested 1 source: 3 lines read = 3 accepted + 0 rejected + 0 duplicates"
        )
        assert store.rejects().empty
        assert store.runs().status.tolist() == ["ok"]


def test_a_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(run_lines("r1")).rstrip("\n"))
    with Store(tmp_path / "s.duckdb") as store:
        assert store.ingest(trace).totals.accepted == 6


def test_an_exit_in_a_later_ingest_pairs_with_its_enter(tmp_path: Path) -> None:
    lines = run_lines("r1")
    a = write(tmp_path / "a.jsonl", lines[:4])
    b = write(tmp_path / "b.jsonl", lines[4:])
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(a)
        running = store.invocations().iloc[0]
        assert (running.status, running.has_exit) == ("running", False)
        assert store.runs().status.tolist() == ["running"]
        store.ingest(b)
        done = store.invocations()
        assert len(done) == 1
        assert (done.iloc[0].status, done.iloc[0].has_enter, done.iloc[0].has_exit) == (
            "ok",
            True,
            True,
        )
        assert store.runs().status.tolist() == ["ok"]


def test_a_late_parent_reroots_its_subtree(tmp_path: Path) -> None:
    child = [
        line(
            {
                "type": "enter",
                "ts": 3,
                "invocationId": "i2",
                "runId": "r/a/b",
                "parentRunId": "r/a",
                "agent": "b",
            }
        ),
        line(
            {
                "type": "exit",
                "ts": 4,
                "invocationId": "i2",
                "runId": "r/a/b",
                "parentRunId": "r/a",
                "agent": "b",
                "ok": True,
            }
        ),
    ]
    parent = [
        line({"type": "run.start", "ts": 1, "runId": "r", "agent": "root"}),
        line(
            {
                "type": "enter",
                "ts": 2,
                "invocationId": "i1",
                "runId": "r/a",
                "parentRunId": "r",
                "agent": "a",
            }
        ),
        line(
            {
                "type": "exit",
                "ts": 5,
                "invocationId": "i1",
                "runId": "r/a",
                "parentRunId": "r",
                "agent": "a",
                "ok": True,
            }
        ),
    ]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write(tmp_path / "child.jsonl", child))
        assert store.runs().run_id.tolist() == ["r/a"]  # inferred root, for now
        store.ingest(write(tmp_path / "parent.jsonl", parent))
        assert store.runs().run_id.tolist() == ["r"]
        inv = store.invocations().set_index("invocation_id")
        assert inv.loc["i2", "root_run_id"] == "r" and inv.loc["i2", "depth"] == 2
        assert inv.loc["i2", "parent_invocation_id"] == "i1"


def test_a_deep_chain_gets_every_depth(tmp_path: Path) -> None:
    depth = 300
    lines = [line({"type": "run.start", "ts": 0, "runId": "r0", "agent": "a"})]
    for d in range(1, depth + 1):
        lines.append(
            line(
                {
                    "type": "enter",
                    "ts": d,
                    "invocationId": f"i{d}",
                    "runId": f"r{d}",
                    "parentRunId": f"r{d - 1}",
                    "agent": f"a{d}",
                }
            )
        )
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write(tmp_path / "deep.jsonl", lines))
        run = store.runs().iloc[0]
        assert (run.run_id, run.max_depth, run.invocations) == ("r0", depth, depth)
        assert store.invocations().root_run_id.eq("r0").all()


def test_duplicates_are_counted_once_and_not_stored(tmp_path: Path) -> None:
    lines = run_lines("r1")
    trace = write(tmp_path / "a.jsonl", [*lines, lines[2], lines[0]])
    copy = write(tmp_path / "copy.jsonl", lines)
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest([trace, copy])
        assert report.reconciliation() == (
            "ingested 2 sources: 14 lines read = 6 accepted + 0 rejected + 8 duplicates"
        )
        assert counts(store) == (6, 1, 1)
        kept = store.sql("SELECT source, line FROM events WHERE type = 'enter'")
        assert kept.values.tolist() == [[str(trace), 3]]


def test_bad_lines_are_rejected_with_line_and_reason_and_the_rest_kept(tmp_path: Path) -> None:
    lines = run_lines("r1")
    bad = [
        "{not json\n",
        line({"type": "enter", "ts": 1, "runId": 2}),
        line({"type": "teleport", "ts": 1}),
        "[1, 2]\n",
        "\n",  # blank: not a record, not counted
    ]
    rfc = line({"type": "node", "ts": "2026-01-01T00:00:00Z", "runId": "r1", "id": "late"})
    trace = write(tmp_path / "bad.jsonl", [*lines[:2], *bad, rfc, *lines[2:]])
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(trace)
        assert report.reconciliation() == (
            "ingested 1 source: 11 lines read = 7 accepted + 4 rejected + 0 duplicates"
        )
        rejects = store.rejects()
        assert rejects.line.tolist() == [3, 4, 5, 6]
        reasons = rejects.reason.tolist()
        assert reasons[0].startswith("not JSON")
        assert "$.runId" in reasons[1] and reasons[1].startswith("not a v1 record")
        assert "$.type" in reasons[2]
        assert rejects.raw.iloc[0] == "{not json"
        late = store.sql("SELECT ts_ms, line FROM events WHERE node = 'late'")
        assert late.values.tolist() == [[1767225600000.0, 8]]


def test_line_numbers_stay_exact_across_parallel_record_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chunk is scanned by DuckDB as several record batches at once (BATCH_ROWS
    # rows each): every line's number, every reject and every record must survive.
    monkeypatch.setattr(sources, "BATCH_ROWS", 16_384)
    good = fleet(6_000)  # 36,000 lines: three record batches and more
    bad_at = [2, 16_384, 16_385, 32_769, 36_003]
    lines = list(good)
    for n in bad_at:
        lines.insert(n - 1, f'{{"type": "bad-{n}"\n')
    trace = write(tmp_path / "big.jsonl", lines)
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(trace)
        assert report.reconciliation() == (
            "ingested 1 source: 36005 lines read = 36000 accepted + 5 rejected + 0 duplicates"
        )
        rejects = store.rejects()
        assert rejects.line.tolist() == bad_at
        assert rejects.raw.tolist() == [f'{{"type": "bad-{n}"' for n in bad_at]
        stored = store.sql("SELECT line, raw FROM events ORDER BY line")
        numbers = [n for n in range(1, len(lines) + 1) if n not in bad_at]
        assert stored.line.tolist() == numbers
        assert stored.raw.tolist() == [lines[n - 1].rstrip("\n") for n in numbers]


def test_lines_that_are_not_utf8_are_rejected(tmp_path: Path) -> None:
    trace = tmp_path / "bytes.jsonl"
    trace.write_bytes("".join(run_lines("r1")[:2]).encode() + b'{"type":"\xff"}\n')
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(trace)
        assert (report.totals.accepted, report.totals.rejected) == (2, 1)
        assert "UTF-8" in store.rejects().reason.iloc[0]


def test_gzip_and_directories_and_globs(tmp_path: Path) -> None:
    (tmp_path / "in" / "deeper").mkdir(parents=True)
    write(tmp_path / "in" / "a.jsonl", run_lines("ra"))
    with gzip.open(tmp_path / "in" / "deeper" / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(run_lines("rb")))
    (tmp_path / "in" / "notes.txt").write_text("not a trace")
    (tmp_path / "in" / "tree.json").write_text(json.dumps({"runs": []}, indent=2))
    with Store(tmp_path / "s.duckdb") as store:
        report = store.ingest(tmp_path / "in")
        assert report.reconciliation() == (
            "ingested 3 sources: 12 lines read = 12 accepted + 0 rejected + 0 duplicates;"
            " 1 not a trace, skipped"
        )
        assert sorted(store.runs().run_id) == ["ra", "rb"]
        again = store.ingest(str(tmp_path / "in" / "**" / "*.jsonl.gz"))
        assert again.reconciliation() == (
            "ingested 1 source: 0 lines read = 0 accepted + 0 rejected + 0 duplicates"
        )


def test_an_ingest_resets_the_classification_of_the_runs_it_touches(tmp_path: Path) -> None:
    lines = run_lines("r1")
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write(tmp_path / "a.jsonl", lines[:5]))
        store.ingest(write(tmp_path / "other.jsonl", run_lines("r2")))
        store.con.execute("UPDATE runs SET outcome = 'stale', classified_at = now()")
        ingest_paths(
            store.con, [write(tmp_path / "b.jsonl", lines[5:])], classify=False
        )  # load and derive only
        runs = store.runs().set_index("run_id")
        assert pd.isna(runs.loc["r1", "outcome"]) and runs.loc["r2", "outcome"] == "stale"
        assert pd.isna(runs.loc["r1", "classified_at"])
        store.ingest(write(tmp_path / "c.jsonl", []))  # a whole ingest classifies what is new
        runs = store.runs().set_index("run_id")
        assert runs.loc["r1", "outcome"] == "ok" and runs.loc["r2", "outcome"] == "stale"


def test_sql_is_read_only(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(write(tmp_path / "a.jsonl", run_lines("r1")))
        assert store.sql("SELECT count(*) AS n FROM events").n.iloc[0] == 6
        for query in ("DELETE FROM events", "DROP TABLE runs", "CREATE TABLE x (a INT)"):
            with pytest.raises(Exception, match="read-only"):
                store.sql(query)
        assert store.sql("SELECT count(*) AS n FROM events").n.iloc[0] == 6


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    from tracekit.errors import TraceFileError

    with Store(tmp_path / "s.duckdb") as store, pytest.raises(TraceFileError, match="no such file"):
        store.ingest(tmp_path / "nope.jsonl")


def test_an_interrupted_ingest_is_finished_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracekit.store.ingest as ingest_module

    trace = write(tmp_path / "fleet.jsonl", fleet(4))

    def crash(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt

    with Store(tmp_path / "s.duckdb") as store:
        monkeypatch.setattr(ingest_module, "derive", crash)
        with pytest.raises(KeyboardInterrupt):
            store.ingest(trace)
        monkeypatch.undo()
        assert store.runs().empty  # stored, not yet derived
        report = store.ingest(trace)  # nothing to read again: its records are all stored
        assert report.reconciliation() == (
            "ingested 1 source: 0 lines read = 0 accepted + 0 rejected + 0 duplicates"
        )
        assert counts(store) == (24, 4, 4)
        assert store.ingest_log().finished_at.notna().all()


def test_a_version_1_store_migrates_with_its_rows(tmp_path: Path) -> None:
    import duckdb

    from tracekit.store.schema import MIGRATIONS, SCHEMA_VERSION

    trace = write(tmp_path / "fleet.jsonl", fleet(3))
    path = tmp_path / "v1.duckdb"
    made_now = tmp_path / "now.duckdb"
    with Store(made_now) as now:
        now.ingest(trace)
    con = duckdb.connect(str(path))
    con.execute(MIGRATIONS[0])
    con.execute("INSERT INTO schema_version (version) VALUES (1)")
    _copy_columns_of_v1(con, made_now)  # today's derive writes today's columns
    before = con.execute("SELECT * FROM events ORDER BY line").fetchall()
    con.close()
    with Store(path) as store:
        assert store.sql("SELECT max(version) AS v FROM schema_version").v.iloc[0] == SCHEMA_VERSION
        rows = store.con.execute("SELECT * EXCLUDE (span_trace) FROM events ORDER BY line")
        assert rows.fetchall() == before  # the v9 column is NULL: v1 records, kept as read
        ddl = store.sql("SELECT sql FROM duckdb_tables() WHERE table_name = 'events'").sql.iloc[0]
        assert "COMPRESSION ZSTD" in ddl.upper()
        assert "hand_over -> billing (ok, 3ms)" in str(store.tree("r1"))
        again = store.ingest(trace)
        assert again.totals.read == 0 and counts(store)[0] == len(before)


def _copy_columns_of_v1(con: object, source: Path) -> None:
    """Fill a v1 store's tables with the v1 columns of a store made today."""
    con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")  # type: ignore[attr-defined]
    for table in ("ingest_log", "events", "invocations", "steps", "runs", "rejects"):
        names = [
            row[0]
            for row in con.execute(  # type: ignore[attr-defined]
                "SELECT column_name FROM duckdb_columns()"
                " WHERE database_name = current_database() AND table_name = ?",
                [table],
            ).fetchall()
        ]
        columns = ", ".join(names)
        con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM src.{table}")  # type: ignore[attr-defined]
    con.execute("DETACH src")  # type: ignore[attr-defined]


@pytest.mark.parametrize("read_only", [False, True])
def test_duckdb_never_draws_its_own_progress_bar(tmp_path: Path, read_only: bool) -> None:
    """A slow statement would otherwise print DuckDB's bar on the caller's stdout."""
    db = tmp_path / "s.duckdb"
    Store(db).close()
    with Store(db, read_only=read_only) as store:
        setting = store.con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    assert setting == (False,)


def test_a_derive_that_fails_rolls_its_ingest_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    import tracekit.store.ingest as ingest_module
    from tracekit.errors import StoreError

    first = write(tmp_path / "first.jsonl", fleet(2))
    second = write(tmp_path / "second.jsonl", [*run_lines("x1"), "not json\n"])
    real_derive = ingest_module.derive

    def failing(con: duckdb.DuckDBPyConnection, since: int) -> int:
        real_derive(con, since)
        return int(con.execute("SELECT CAST(1e19 AS BIGINT)").fetchall()[0][0])

    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(first)
        tables = ("events", "rejects", "ingest_log", "invocations", "steps", "runs")
        before = {
            t: store.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables
        }
        monkeypatch.setattr(ingest_module, "derive", failing)
        with pytest.raises(StoreError, match=r"second\.jsonl: could not .* nothing of this"):
            store.ingest(second)
        monkeypatch.undo()
        after = {t: store.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
        assert after == before
        report = store.ingest(second)
        assert report.reconciliation() == (
            "ingested 1 source: 7 lines read = 6 accepted + 1 rejected + 0 duplicates"
        )
        assert counts(store) == (18, 3, 3)


def test_an_interrupted_gzip_read_is_undone_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import functools

    import tracekit.store.ingest as ingest_module

    lines = [*fleet(4), "not json\n"]
    trace = tmp_path / "fleet.jsonl.gz"
    trace.write_bytes(gzip.compress("".join(lines).encode()))
    # Small chunks, so that the read is cut short after some have committed.
    monkeypatch.setattr(
        ingest_module, "read_chunks", functools.partial(sources.read_chunks, size=400)
    )
    monkeypatch.setattr(sources, "_GZIP_PIECE", 400)  # inflated a little at a time
    real_load = ingest_module.load_batch
    calls = {"n": 0}

    def load_then_crash(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    with Store(tmp_path / "s.duckdb") as store:
        monkeypatch.setattr(ingest_module, "load_batch", load_then_crash)
        with pytest.raises(KeyboardInterrupt):
            store.ingest(trace)
        monkeypatch.setattr(ingest_module, "load_batch", real_load)
        assert 0 < counts(store)[0] < 24
        report = store.ingest(trace)
        assert report.reconciliation() == (
            "ingested 1 source: 25 lines read = 24 accepted + 1 rejected + 0 duplicates"
        )
        assert counts(store) == (24, 4, 4)
        assert len(store.rejects()) == 1
        assert len(store.ingest_log()) == 1


def test_a_run_named_only_as_a_parent_reads_back_as_the_invocations_that_name_it(
    tmp_path: Path,
) -> None:
    """The store lists a parent run that never started; its tree is what names it, not an error."""
    path = write(
        tmp_path / "t.jsonl",
        [
            line({"type": "run.start", "ts": 1, "runId": "r", "agent": "root"}),
            line(
                {
                    "type": "enter",
                    "ts": 1000,
                    "invocationId": "i0",
                    "runId": "c0",
                    "parentRunId": "x",
                    "agent": "a",
                    "kind": "delegate",
                }
            ),
        ],
    )
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest([path])
        runs = sorted(r for (r,) in store.con.execute("SELECT run_id FROM runs").fetchall())
        assert runs == ["r", "x"]
        assert [step.agent for step in store.tree("x")] == ["a"]


def test_a_steps_call_is_read_however_its_line_is_spaced(tmp_path: Path) -> None:
    lines = run_lines("r")
    spaced = '{"type": "node", "ts": 2, "runId": "r", "id": "lookup", "call" : "tool"}\n'
    path = write(tmp_path / "spaced.jsonl", [*lines[:2], spaced, *lines[2:]])
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest([path])
        calls = store.sql("SELECT name, call FROM steps ORDER BY name").values.tolist()
    assert ["lookup", "tool"] in calls
