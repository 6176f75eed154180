"""The small edges a newcomer meets first: each refuses or says what happened in one line."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from tests._tree_helpers import ROOT, run_cli

SAMPLES = ROOT / "sample_traces"


def _one_error(ran: subprocess.CompletedProcess[str]) -> str:
    """The run failed with exit 2 and one ``Error:`` line (and its hint), no traceback."""
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert "Traceback" not in ran.stderr
    lines = ran.stderr.splitlines()
    assert lines[0].startswith("Error: ") and len(lines) <= 2, ran.stderr
    return lines[0]


@pytest.mark.parametrize("option", ["--port", "--grpc-port"])
def test_serve_refuses_a_port_out_of_range(option: str, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    line = _one_error(run_cli("serve", "--db", str(db), option, "99999"))
    assert f"{option} 99999" in line and "0 to 65535" in line
    assert not db.exists()


def test_serve_grpc_without_grpcio_says_which_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['grpc'] = None; from tracekit.cli.entry import main;"
        f" sys.argv = ['tracekit', 'serve', '--db', {str(tmp_path / 's.duckdb')!r},"
        " '--grpc-port', '4317']; main()"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    _one_error(ran)
    assert "pip install 'tracekit-agents[serve]'" in ran.stderr


def test_dashboard_refuses_an_out_in_a_missing_folder(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert run_cli("ingest", str(SAMPLES / "child_failure.jsonl"), "--db", str(db)).returncode == 0
    out = tmp_path / "missing" / "dir" / "x.html"
    line = _one_error(run_cli("dashboard", "--db", str(db), "--out", str(out)))
    assert "does not exist" in line
    assert not (tmp_path / "missing").exists()  # no folder made for a typo


def test_a_failed_export_leaves_no_lake_folder(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _one_error(run_cli("export", "--db", str(tmp_path / "none.duckdb"), "--to", str(lake)))
    assert not lake.exists()


@pytest.mark.parametrize(
    ("name", "data", "why"),
    [
        ("README.md", (ROOT / "README.md").read_bytes(), "no JSON in its first 5 lines"),
        ("picture.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), "binary data"),
    ],
)
def test_ingest_refuses_what_is_no_trace(name: str, data: bytes, why: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    new = tmp_path / "new.duckdb"
    line = _one_error(run_cli("ingest", str(path), "--db", str(new)))
    assert line.startswith(f"Error: {path}: not a trace ({why}") and "nothing was stored" in line
    assert not new.exists()  # no store made for it
    kept = tmp_path / "kept.duckdb"
    assert (
        run_cli("ingest", str(SAMPLES / "child_failure.jsonl"), "--db", str(kept)).returncode == 0
    )
    before = run_cli(
        "sql", "SELECT count(*) AS n FROM rejects", "--db", str(kept), "--format", "csv"
    )
    _one_error(
        run_cli("ingest", str(SAMPLES / "agent_orchestrator.jsonl"), str(path), "--db", str(kept))
    )
    after = run_cli("sql", "SELECT count(*) AS n FROM events", "--db", str(kept), "--format", "csv")
    assert before.stdout == "n\n0\n" and after.stdout == "n\n10\n"  # nothing of that ingest


def test_several_otlp_files_are_counted_once_their_traces_joined(tmp_path: Path) -> None:
    whole = tmp_path / "w.otlp.jsonl"
    made = run_cli("simulate", "--runs", "60", "--seed", "3", "--format", "otlp", "-o", str(whole))
    assert made.returncode == 0, made.stderr
    lines = whole.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 2
    half = len(lines) // 2
    (tmp_path / "wa.otlp.jsonl").write_bytes(b"".join(lines[:half]))
    (tmp_path / "wb.otlp.jsonl").write_bytes(b"".join(lines[half:]))
    one = run_cli("ingest", str(whole), "--db", str(tmp_path / "one.duckdb")).stdout.splitlines()
    two = run_cli(
        "ingest",
        str(tmp_path / "wa.otlp.jsonl"),
        str(tmp_path / "wb.otlp.jsonl"),
        "--db",
        str(tmp_path / "two.duckdb"),
    ).stdout.splitlines()
    spans = one[1].strip()  # "N spans read = ..." of the one file
    assert two[2] == f"the 2 OTLP files, their traces joined: {spans}"
    assert not any(line.startswith("  0 spans read") for line in two)
    read = [int(line.split(": ")[1].split()[0]) for line in two[:2]]
    assert sum(read) == int(one[0].split(": ")[1].split()[0])  # every record under its file


def test_the_progress_of_a_gz_counts_compressed_bytes(tmp_path: Path) -> None:
    from tracekit import Store

    made = tmp_path / "f.jsonl"
    assert run_cli("simulate", "--runs", "300", "--seed", "1", "-o", str(made)).returncode == 0
    packed = tmp_path / "f.jsonl.gz"
    packed.write_bytes(gzip.compress(made.read_bytes()))
    seen: list[int] = []
    totals: list[int] = []

    import contextlib

    @contextlib.contextmanager
    def progress(total: int, sources: int):  # type: ignore[no-untyped-def]
        totals.append(total)
        yield seen.append

    with Store(tmp_path / "s.duckdb") as store:
        store.ingest([packed], progress=progress)
    size = packed.stat().st_size
    assert totals == [size] and sum(seen) == size  # not the inflated bytes (several times more)


def test_diff_of_a_run_with_itself_says_no_differences_plainly() -> None:
    trace = str(SAMPLES / "child_failure.jsonl")
    shown = run_cli("diff", trace, trace).stdout.splitlines()
    assert shown[1] == "no differences (no call slower past +50% and +20ms)"


def test_a_damaged_gz_is_not_counted_as_a_bad_line_of_those_read(tmp_path: Path) -> None:
    data = gzip.compress((SAMPLES / "child_failure.jsonl").read_bytes() * 200)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    notes = run_cli("tree", str(cut)).stderr.splitlines()
    head = notes[0]
    read = int(head.split()[1])
    assert (
        head
        == f"read {read} lines, then the stream ended damaged (the tree shows every good line):"
    )
    assert notes[1].startswith(f"  {cut}:{read + 1}: gzip stream damaged")


@pytest.mark.parametrize(
    "path",
    ["demo.duckdb", "demo/fleet.jsonl", "f.duckdb.spool/0001", "f.duckdb.server.json", "lake/x"],
)
def test_what_the_demo_serve_and_export_leave_is_ignored_by_git(path: str) -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT, capture_output=True, timeout=30
    )
    assert ignored.returncode == 0, path


def test_the_demo_lists_the_optional_features_not_installed() -> None:
    """One line each, with its pip install: here every module is hidden."""
    from tracekit._util.extras import EXTRAS

    code = (
        "import runpy, sys;"
        f" [sys.modules.__setitem__(m, None) for m in {[e.module for e in EXTRAS]!r}];"
        " runpy.run_module('tracekit._util.extras', run_name='__main__')"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    lines = ran.stdout.splitlines()
    assert ran.returncode == 0 and len(lines) == len(EXTRAS)
    for line, extra in zip(lines, EXTRAS, strict=True):
        assert (
            line == f"not installed: {extra.feature}: pip install 'tracekit-agents[{extra.extra}]'"
        )
