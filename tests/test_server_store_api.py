"""Every store command while the server runs: export from its snapshot, ingest through it, a sidecar checked.

A real server on loopback; the commands are the installed ``tracekit``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _server_helpers import TRACEKIT, start

from tracekit.lake.export import default_writer
from tracekit.simulation.simulator import simulate
from tracekit.store import Store


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRACEKIT, *args], capture_output=True, text=True, timeout=120)


def _runs(url_db: Path) -> int:
    found = _run("sql", "SELECT count(*) AS n FROM runs", "--db", str(url_db), "--format", "csv")
    assert found.returncode == 0, found.stderr
    return int(found.stdout.split()[-1])


def test_ingest_goes_through_the_server_and_export_reads_its_snapshot(tmp_path: Path) -> None:
    simulate(tmp_path / "fleet.jsonl", runs=30, seed=5)
    with Store(tmp_path / "free.duckdb") as free:
        free.ingest([tmp_path / "fleet.jsonl"])
        expected = int(free.sql("SELECT count(*) AS n FROM runs")["n"][0])
    server = start(tmp_path / "served.duckdb")
    try:
        sent = _run("ingest", str(tmp_path / "fleet.jsonl"), "--db", str(server.db))
        assert sent.returncode == 0, sent.stderr
        assert f"held by tracekit serve at {server.url}" in sent.stdout
        assert "POST /v1/records" in sent.stdout
        deadline = time.monotonic() + 60
        while _runs(server.db) < expected and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _runs(server.db) == expected
        exported = _run("export", "--to", str(tmp_path / "lake"), "--db", str(server.db))
        assert exported.returncode == 0, exported.stderr
        assert not (tmp_path / "served.duckdb.snapshot").exists()  # removed after
        # The server went on: it still takes spans and answers.
        assert server.get("/healthz")[0] == 200
        lake = _run("fleet", "--lake", str(tmp_path / "lake"), "--format", "json")
        assert lake.returncode == 0, lake.stderr
        direct = _run("fleet", "--db", str(tmp_path / "free.duckdb"), "--format", "json")
        assert json.loads(lake.stdout)["runs"] == json.loads(direct.stdout)["runs"]
    finally:
        assert server.stop() == 0, server.err
    # Exported again once the server has stopped, the store is the same writer of the lake
    # (named after the store, not its snapshot): its runs are replaced, never doubled.
    again = _run("export", "--to", str(tmp_path / "lake"), "--db", str(server.db))
    assert again.returncode == 0, again.stderr
    assert [p.name for p in (tmp_path / "lake" / "_writers").glob("*.json")] == [
        f"{default_writer(server.db)}.json"
    ]
    lake = _run("fleet", "--lake", str(tmp_path / "lake"), "--format", "json")
    assert json.loads(lake.stdout)["runs"] == json.loads(direct.stdout)["runs"]


def test_a_sidecar_is_trusted_only_when_its_server_answers_as_tracekit(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    simulate(tmp_path / "fleet.jsonl", runs=3, seed=6)
    with Store(db) as store:
        store.ingest([tmp_path / "fleet.jsonl"])
    # A stale sidecar whose pid is a live process (this one) and whose port is not tracekit.
    other = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = other.stdout.readline() if other.stdout else ""
        port = line.split("port ")[1].split(" ")[0]
        sidecar = {"url": f"http://127.0.0.1:{port}", "pid": os.getpid(), "token_required": False}
        db.with_name(db.name + ".server.json").write_text(json.dumps(sidecar))
        for command in (["runs"], ["rejects"], ["find", "triage ~> *"]):
            found = _run(*command, "--db", str(db))
            assert found.returncode == 0, (command, found.stderr)
        assert _runs(db) == 3
    finally:
        other.terminate()
        other.communicate(timeout=10)
