"""The store commands through the installed ``tracekit`` script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._store_helpers import TRACEKIT, cli, fleet, line, run_lines, write

SAMPLES = sorted(Path(__file__).parent.parent.joinpath("sample_traces").glob("*.jsonl"))


def test_ingest_prints_the_reconciling_line_and_runs_lists_them(tmp_path: Path) -> None:
    trace = write(tmp_path / "fleet.jsonl", fleet(6))
    db = tmp_path / "s.duckdb"
    done = cli("ingest", str(trace), db=db)
    assert done.stdout.splitlines()[-1] == (
        "ingested 1 source: 36 lines read = 36 accepted + 0 rejected + 0 duplicates"
    )
    table = cli("runs", db=db).stdout.splitlines()
    assert table[0].split()[:4] == ["run_id", "start_at", "service", "agent"]
    assert len(table) == 7
    from tracekit import Store

    with Store(db, read_only=True) as store:
        assert store.runs().outcome.notna().all()  # the ingest classified every run
        assert len(store.runs(agent="billing")) == 6
        assert store.runs(agent="front", since="2h").empty  # ts are in 1970
        assert len(store.runs(since="1970-01-01T00:00:00")) == 6
    failed = cli("runs", "--status", "error", "--format", "json", db=db).stdout.splitlines()
    assert sorted(json.loads(r)["run_id"] for r in failed) == ["r0", "r3"]
    csv = cli("runs", "--limit", "2", "--format", "csv", db=db).stdout.splitlines()
    assert csv[0].startswith("run_id,") and len(csv) == 3
    empty = cli("runs", "--status", "cancelled", db=db)
    assert (empty.stdout, empty.stderr) == ("", "(no rows)\n")
    bad = cli("runs", "--since", "yesterday", db=db, check=False)
    assert bad.returncode == 2 and "not a time span" in bad.stderr


def test_runs_filters_are_checked(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cli("ingest", str(write(tmp_path / "fleet.jsonl", fleet(3))), db=db)
    cases = {
        ("--status", "eror"): [
            "Error: status 'eror' is not a run status or outcome",
            "Did you mean 'error'? Use one of: ok, error, running, failed, degraded,"
            " failed:recursion, failed:child, failed:refused, cancelled, incomplete.",
        ],
        ("--service", "sv"): [
            "Error: no run has service 'sv'",
            "Did you mean 'svc'? Known services: svc.",
        ],
        ("--agent", "nobody"): [
            "Error: no run has agent 'nobody'",
            "Known agents: billing, front.",
        ],
    }
    for args, lines in cases.items():
        done = cli("runs", *args, db=db, check=False)
        assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", lines), args
    assert (
        len(
            cli("runs", "--status", "failed:child", "--agent", "billing", db=db).stdout.splitlines()
        )
        == 2
    )


def test_a_failed_ingest_leaves_no_new_store(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    missing = cli("ingest", str(tmp_path / "nope.jsonl"), db=db, check=False)
    assert missing.returncode == 2 and missing.stderr.startswith("Error: ")
    assert not db.exists() and not (tmp_path / "new.duckdb.wal").exists()
    document = tmp_path / "doc.json"
    document.write_text('{\n  "not": "a trace"\n}\n')
    skipped = cli("ingest", str(document), db=db)
    assert "nothing was ingested" in skipped.stderr and not db.exists()
    cli("ingest", str(write(tmp_path / "a.jsonl", run_lines("r1"))), db=db)
    again = cli("ingest", str(tmp_path / "nope.jsonl"), db=db, check=False)
    assert again.returncode == 2 and db.exists()  # a store that was there is kept
    assert "r1" in cli("runs", db=db).stdout


def test_db_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = write(tmp_path / "a.jsonl", run_lines("r1"))
    monkeypatch.setenv("TRACEKIT_DB", str(tmp_path / "env.duckdb"))
    cli("ingest", str(trace))
    assert (tmp_path / "env.duckdb").exists()
    assert "r1" in cli("runs").stdout


def test_ingest_from_stdin(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    done = cli("ingest", "-", db=db, stdin="".join(run_lines("r1")) + "{oops\n")
    assert done.stdout.splitlines()[-1] == (
        "ingested 1 source: 7 lines read = 6 accepted + 1 rejected + 0 duplicates"
    )
    rejects = cli("rejects", "--format", "json", db=db).stdout.splitlines()
    assert [(json.loads(r)["source"], json.loads(r)["line"]) for r in rejects] == [("-", 7)]


def test_sql_runs_selects_and_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cli("ingest", str(write(tmp_path / "a.jsonl", run_lines("r1"))), db=db)
    out = cli(
        "sql",
        "SELECT type, count(*) AS n FROM events GROUP BY 1 ORDER BY 1",
        "--format",
        "csv",
        db=db,
    )
    assert out.stdout.splitlines() == [
        "type,n",
        "enter,1",
        "exit,1",
        "node,2",
        "run.end,1",
        "run.start,1",
    ]
    refused = cli("sql", "DELETE FROM events", db=db, check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith("Error: the store's SQL is read-only: DELETE statements")
    assert "Traceback" not in refused.stderr


def test_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    done = cli("runs", db=tmp_path / "none.duckdb", check=False)
    assert done.returncode == 2
    assert "no store here" in done.stderr and "Traceback" not in done.stderr


def test_a_second_writer_gets_a_clear_message(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    trace = write(tmp_path / "a.jsonl", run_lines("r1"))
    cli("ingest", str(trace), db=db)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True);"
            " time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        done = cli("ingest", str(trace), db=db, check=False)
        assert done.returncode == 2
        assert "the store is locked by `python -c import duckdb" in done.stderr
        assert f"(pid {holder.pid})" in done.stderr
        assert "Traceback" not in done.stderr
        from tracekit import Store, StoreLockedError

        with pytest.raises(StoreLockedError, match=f"pid {holder.pid}"):
            Store(db)
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def _tree(*args: str) -> str:
    """``tracekit tree`` run in process (the subprocess tests above cover the script)."""
    from typer.testing import CliRunner

    from tracekit.cli.app import app

    return CliRunner().invoke(app, ["tree", *args, "--color", "never"]).stdout


def _why(db: Path, run_id: str) -> str:
    """What ``tree RUN --db`` prints after the tree: why the run ended as it did (if not ok)."""
    from tracekit import Store
    from tracekit.store.cause import describe_cause

    with Store(db, read_only=True) as store:
        cause = store.root_cause(run_id)
    return "".join(f"{line}\n" for line in (describe_cause(cause) if cause else []))


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_a_store_tree_equals_the_file_tree(sample: Path, tmp_path: Path) -> None:
    from tracekit import Store

    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.ingest(sample)
        runs = store.runs()
    started = sorted(runs[runs.has_start].run_id)
    assert started
    for run_id in started:
        from_store = _tree(run_id, "--db", str(db))
        from_file = _tree(str(sample), "--run", run_id)
        # the same tree, then why it ended so: the file's records say what the store's rows say
        assert from_file and from_store == from_file, run_id
        assert from_store.endswith(_why(db, run_id))
    if len(runs) == 1:  # the run's own file
        assert from_store == _tree(str(sample))


def _reusing(root: str, agent: str, ts: int, *, child: str | None = None) -> list[str]:
    """A root run whose one delegation, with a step in it, has the invocation id ``i1``."""
    child = child or f"{root}/c"
    edge = {"invocationId": "i1", "runId": child, "parentRunId": root, "agent": agent}
    return [
        line({"type": "run.start", "ts": ts, "runId": root, "agent": "front"}),
        line({"type": "enter", "ts": ts + 1, **edge, "node": "hand_over"}),
        line({"type": "node", "ts": ts + 2, "runId": child, "id": "work"}),
        line({"type": "exit", "ts": ts + 3, **edge, "node": "hand_over", "ok": True}),
        line({"type": "run.end", "ts": ts + 4, "runId": root, "ok": True, "durationMs": 4}),
    ]


@pytest.mark.parametrize(
    ("records", "asked"),
    [
        # one root, two delegations under one id (another agent, another child run)
        (_reusing("R", "billing", 1) + _reusing("R", "refunds", 10, child="R/d")[1:4:2], ["R"]),
        # the same, the second child run with a step: it is drawn as a run of its own
        (
            _reusing("R", "billing", 1) + _reusing("R", "refunds", 10, child="R/d")[1:4],
            ["R", "R/d"],
        ),
        # two roots, the first one read keeps the id
        (_reusing("S", "billing", 1) + _reusing("R", "refunds", 10), ["S", "R", "R/c"]),
    ],
    ids=["one-root", "one-root-steps", "two-roots"],
)
def test_a_reused_invocation_id_gives_one_tree_from_the_file_and_the_store(
    records: list[str], asked: list[str], tmp_path: Path
) -> None:
    trace = write(tmp_path / "reused.jsonl", records)
    db = tmp_path / "s.duckdb"
    cli("ingest", str(trace), db=db)
    for run_id in asked:
        pick = [] if len(asked) == 1 else ["--run", run_id]
        from_file = cli("tree", str(trace), *pick, "--color", "never")
        from_store = cli("tree", run_id, "--color", "never", "--db", str(db))
        assert (from_store.stdout, from_store.stderr) == (from_file.stdout, from_file.stderr)
        assert "ids given twice with different content (first kept): i1" in from_file.stderr


def test_tree_db_through_the_script(tmp_path: Path) -> None:
    sample = next(p for p in SAMPLES if p.stem == "child_failure")
    db = tmp_path / "s.duckdb"
    cli("ingest", str(sample), db=db)
    from_store = cli("tree", "run-fail", "--color", "never", "--db", str(db))
    from_file = cli("tree", str(sample), "--color", "never").stdout
    assert from_store.stdout == from_file  # the tree, then why, from the store as from the file
    assert from_store.stdout.endswith(
        "outcome failed:child\n"
        'began in agent refunds at depth 2 (REFUND_API_TIMEOUT): "refunds API did not answer in 3s"\n'
    )
    as_option = cli("tree", "--run", "run-fail", "--color", "never", "--db", str(db))
    assert as_option.stdout == from_store.stdout  # --run RUN_ID with --db needs no FILE
    missing = cli("tree", "nope", "--db", str(db), check=False)
    assert missing.returncode == 2 and "no run 'nope'" in missing.stderr


def test_tree_db_says_why_a_recursion_failed_as_the_run_page_does(tmp_path: Path) -> None:
    sample = next(p for p in SAMPLES if p.stem == "recursion_circle")
    db = tmp_path / "s.duckdb"
    cli("ingest", str(sample), db=db)
    shown = cli("tree", "run-circ", "--color", "never", "--db", str(db)).stdout.splitlines()
    assert shown[-2:] == [
        "outcome failed:recursion: circle billing -> orders -> billing"
        " (wrong by construction: it will happen again)",
        'refused in agent orders at depth 3 (AGENT_RECURSION): "orders is already running:'
        ' orders -> billing -> orders"',
    ]
    as_json = cli("tree", "run-circ", "--format", "json", "--db", str(db)).stdout
    json.loads(as_json)  # JSON stays JSON: the why is in it already
    nothing = cli("tree", "--db", str(db), check=False)
    assert nothing.returncode == 2 and "give a RUN_ID" in nothing.stderr


def test_tree_db_shows_a_child_run_and_honours_run(tmp_path: Path) -> None:
    sample = next(p for p in SAMPLES if p.stem == "child_failure")
    db = tmp_path / "s.duckdb"
    cli("ingest", str(sample), db=db)
    for child in ("run-fail/billing", "run-fail/billing/refunds"):
        from_file = cli("tree", str(sample), "--run", child, "--color", "never").stdout
        assert cli("tree", child, "--color", "never", "--db", str(db)).stdout == from_file
        asked = cli("tree", "run-fail", "--run", child, "--color", "never", "--db", str(db))
        assert asked.stdout == from_file, child
    for argv in (["tree", "run-fail", "--run", "nope"], ["tree", "run-fail/nope"]):
        missing = cli(*argv, db=db, check=False)
        assert missing.returncode == 2 and missing.stdout == "", argv
        assert missing.stderr.startswith("Error: ") and "nope" in missing.stderr
        assert "Traceback" not in missing.stderr


def test_ids_are_never_cut_in_a_table(tmp_path: Path) -> None:
    from tracekit import Store
    from tracekit.cli.tables import render

    long_id = "run-" + "x" * 70
    trace = write(tmp_path / "a.jsonl", run_lines(long_id))
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(trace)
        text = render(store.runs(), "table", width=100)
    assert long_id in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_runs_fits_the_terminal_and_csv_and_json_keep_everything(tmp_path: Path) -> None:
    import csv
    import io
    import os

    trace = write(tmp_path / "fleet.jsonl", fleet(6))
    db = tmp_path / "s.duckdb"
    cli("ingest", str(trace), db=db)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "80"}
    narrow = subprocess.run(
        [TRACEKIT, "runs", "--db", str(db)], capture_output=True, text=True, env=env, timeout=60
    )
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert len(lines) == 7 and max(map(len, lines)) <= 80
    full = cli("runs", db=db).stdout  # COLUMNS=200: every column
    assert "<NA>" not in full and "nan" not in full
    origins = [
        row.split()[full.splitlines()[0].split().index("origin_code")]
        for row in full.splitlines()[1:]
    ]
    assert "-" in origins  # an ok run has no origin
    header = lines[0].split()
    assert header[:5] == ["run_id", "start_at", "service", "agent", "outcome"]
    (note,) = narrow.stderr.splitlines()
    hidden = note.split(": ", 1)[1].split(" (")[0].split(", ")
    assert "output_tokens" in hidden and not set(hidden) & set(header)
    wide = cli("runs", "--format", "csv", db=db).stdout
    rows = list(csv.DictReader(io.StringIO(wide)))
    assert len(rows) == 6 and {"output_tokens", "origin_code", "session_id"} <= set(rows[0])
    objects = [json.loads(r) for r in cli("runs", "--format", "json", db=db).stdout.splitlines()]
    assert set(objects[0]) == set(rows[0])


def test_a_store_and_a_trace_given_for_each_other_say_what_to_run(tmp_path: Path) -> None:
    trace = write(tmp_path / "fleet.jsonl", fleet(2))
    db = tmp_path / "s.duckdb"
    cli("ingest", str(trace), db=db)
    wrong_db = cli("runs", db=trace, check=False)
    assert wrong_db.returncode == 2 and "Traceback" not in wrong_db.stderr
    assert wrong_db.stderr.splitlines() == [
        f"Error: {trace}: not a tracekit store (a store is a DuckDB file; is this a trace?)",
        f"Read a trace with: tracekit tree {trace}; store it with:"
        f" tracekit ingest {trace} --db tracekit.duckdb",
    ]
    assert trace.read_bytes() == write(tmp_path / "again.jsonl", fleet(2)).read_bytes()
    store_as_trace = cli("tree", str(db), check=False)
    assert store_as_trace.returncode == 2
    assert store_as_trace.stderr.splitlines()[1].startswith(
        f"Read a run from it: tracekit tree RUN_ID --db {db}"
    )


def test_find_names_an_agent_that_is_in_no_run(tmp_path: Path) -> None:
    trace = write(tmp_path / "fleet.jsonl", fleet(2))
    db = tmp_path / "s.duckdb"
    cli("ingest", str(trace), db=db)
    done = cli("find", "front > billng", db=db)
    assert done.stderr.splitlines()[-2:] == [
        "0 runs, 0 paths",
        "no agent billng in any run; did you mean billing?",
    ]
