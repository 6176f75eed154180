"""Hostile and odd inputs through the installed ``tracekit``: long lines, cut gzip, pipes.

Every input failure is one line on stderr with exit code 2, the lines beside
it are kept, and ``tracekit tree`` and ``tracekit ingest`` split lines alike.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import threading
from pathlib import Path

from tests._store_helpers import TRACEKIT, cli, line, run_lines, write
from tracekit.events import MAX_LINE_BYTES

START = line({"type": "run.start", "ts": 1, "runId": "r", "agent": "a"})


def node(ts: int, **extra: object) -> str:
    return line({"type": "node", "ts": ts, "runId": "r", "id": f"s{ts}", **extra})


def long_node() -> str:
    """A valid record just over the line limit."""
    return node(9, attrs={"blob": "x" * MAX_LINE_BYTES})


def counts(db: Path) -> list[str]:
    sql = "SELECT lines_read, accepted, rejected, duplicates FROM ingest_log ORDER BY ingest_id"
    return cli("sql", sql, "--format", "csv", db=db).stdout.splitlines()[1:]


def rejects(db: Path) -> list[tuple[int, str]]:
    sql = "SELECT line, reason FROM rejects ORDER BY line"
    rows = cli("sql", sql, "--format", "json", db=db).stdout.splitlines()
    return [(r["line"], r["reason"]) for r in map(json.loads, rows)]


def test_a_line_over_the_limit_is_refused_by_number_and_its_neighbours_kept(
    tmp_path: Path,
) -> None:
    trace = write(tmp_path / "long.jsonl", [START, node(2), long_node(), node(3)])
    db = tmp_path / "s.duckdb"
    done = cli("ingest", str(trace), db=db)
    assert done.stdout.splitlines()[-1] == (
        "ingested 1 source: 4 lines read = 3 accepted + 1 rejected + 0 duplicates"
    )
    [(number, reason)] = rejects(db)
    assert number == 3 and reason.startswith("line too long (16,777,")
    tree = cli("tree", str(trace))
    assert "s2" in tree.stdout and "s3" in tree.stdout
    assert f"{trace}:3: line too long (16,777," in tree.stderr


def test_a_gzip_line_that_never_ends_is_refused_and_the_lines_before_kept(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "bomb.jsonl.gz"
    with gzip.open(trace, "wb", compresslevel=1) as out:
        out.write((START + node(2)).encode())
        for _ in range(MAX_LINE_BYTES // (1 << 20) + 4):
            out.write(b"x" * (1 << 20))
    db = tmp_path / "s.duckdb"
    cli("ingest", str(trace), db=db)
    assert counts(db) == ["3,2,1,0"]
    [(number, reason)] = rejects(db)
    assert number == 3 and reason.startswith("line too long (20,971,520 bytes")
    tree = cli("tree", str(trace))
    assert "s2" in tree.stdout
    assert f"{trace}:3: line too long (20,971,520 bytes" in tree.stderr


def test_a_first_line_over_64_kib_or_cut_off_is_read_as_a_line_not_a_document(
    tmp_path: Path,
) -> None:
    big = write(tmp_path / "big.jsonl", [node(2, attrs={"a": "x" * 100_000}), START, node(3)])
    cut = write(tmp_path / "cut.jsonl", ['{"type":"node","ts":1,"ru\n', START, node(4)])
    db = tmp_path / "s.duckdb"
    done = cli("ingest", str(big), str(cut), db=db)
    assert done.stdout.splitlines()[-1] == (
        "ingested 2 sources: 6 lines read = 4 accepted + 1 rejected + 1 duplicate"
    )
    assert rejects(db)[0][0] == 1


def test_a_json_document_that_is_not_a_trace_is_skipped_with_its_reason(tmp_path: Path) -> None:
    doc = tmp_path / "tree.json"
    doc.write_text(json.dumps({"runs": [{"runId": "r"}]}, indent=2))
    done = cli("ingest", str(doc), db=tmp_path / "s.duckdb")
    assert done.stdout.splitlines()[0] == (
        f"{doc}: skipped, a JSON document that is not OTLP (no resourceSpans)"
    )


def test_a_truncated_gzip_is_one_line_exit_2_its_lines_kept_and_the_store_opens(
    tmp_path: Path,
) -> None:
    whole = gzip.compress("".join(x for n in range(400) for x in run_lines(f"r{n}")).encode())
    trace = tmp_path / "cut.jsonl.gz"
    trace.write_bytes(whole[: len(whole) // 2])
    db = tmp_path / "s.duckdb"
    done = cli("ingest", str(trace), db=db, check=False)
    assert done.returncode == 2
    [message] = done.stderr.splitlines()
    assert message.startswith(f"Error: {trace}: gzip stream damaged (")
    assert message.endswith("; the lines before it are stored, the rest of the file is lost")
    read, accepted, rejected, duplicates = map(int, counts(db)[0].split(","))
    assert accepted > 100 and rejected == 1 and read == accepted + rejected + duplicates
    assert rejects(db)[0][1].startswith("gzip stream damaged")
    assert len(cli("runs", db=db).stdout.splitlines()) > 10


def test_process_substitution_is_read_as_a_stream(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.jsonl", run_lines("r"))
    db = tmp_path / "s.duckdb"
    for command in (
        f"{TRACEKIT} ingest <(cat {trace}) --db {db}",
        f"{TRACEKIT} tree <(cat {trace})",
    ):
        done = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
    assert counts(db) == ["6,6,0,0"]
    assert "billing" in done.stdout


def test_a_fifo_path_is_read_as_a_stream_and_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=("".join(run_lines("r")),))
    writer.start()
    db = tmp_path / "s.duckdb"
    done = subprocess.run(
        [TRACEKIT, "ingest", str(fifo), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    writer.join()
    assert done.returncode == 0, done.stderr
    assert counts(db) == ["6,6,0,0"]


def test_an_out_of_range_since_is_one_line_and_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cli("ingest", str(write(tmp_path / "t.jsonl", run_lines("r"))), db=db)
    for command in ("runs", "fleet"):
        done = cli(command, "--since", "1000000d", db=db, check=False)
        assert (done.returncode, done.stderr) == (
            2,
            "Error: --since '1000000d': reaches beyond the years 1 to 9999\n",
        )


def test_tree_and_ingest_split_lines_alike_and_a_bom_costs_nothing(tmp_path: Path) -> None:
    lone_cr = write(tmp_path / "cr.jsonl", [START, node(2).rstrip("\n") + "\r" + node(3)])
    crlf = write(tmp_path / "crlf.jsonl", [START.replace("\n", "\r\n"), node(4)])
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + (START + node(5)).encode())
    db = tmp_path / "s.duckdb"
    cli("ingest", str(lone_cr), str(crlf), str(bom), db=db)
    assert counts(db) == ["2,1,1,0", "2,1,0,1", "2,1,0,1"]
    assert [r[0] for r in rejects(db)] == [2]
    tree = cli("tree", str(lone_cr))
    assert "s2" not in tree.stdout and "s3" not in tree.stdout
    assert f"{lone_cr}:2: not JSON" in tree.stderr
    for path in (crlf, bom):
        done = cli("tree", str(path))
        assert "bad line" not in done.stderr, done.stderr


def test_a_device_is_refused_in_one_line_not_read_forever(tmp_path: Path) -> None:
    for args in (
        ["ingest", "/dev/zero", "--db", str(tmp_path / "s.duckdb")],
        ["tree", "/dev/zero"],
    ):
        done = subprocess.run(
            [TRACEKIT, *args], capture_output=True, text=True, timeout=60, check=False
        )
        assert (done.returncode, done.stderr) == (
            2,
            "Error: /dev/zero: is a device, not a trace file\n",
        )


def test_store_ingest_raises_a_damaged_gzip_with_the_report_of_what_it_stored(
    tmp_path: Path,
) -> None:
    from tracekit import Store, TraceDamagedError

    whole = gzip.compress("".join(x for n in range(400) for x in run_lines(f"r{n}")).encode())
    trace = tmp_path / "cut.jsonl.gz"
    trace.write_bytes(whole[: len(whole) // 2])
    with Store(tmp_path / "s.duckdb") as store:
        try:
            store.ingest(trace)
        except TraceDamagedError as exc:
            report = exc.report
        else:
            raise AssertionError("a cut gzip stream was not reported")
        total = report.totals
        assert total.read == total.accepted + total.rejected + total.duplicates
        assert total.rejected == 1 and len(store.runs()) > 10
