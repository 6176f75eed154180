"""Reading a store while `tracekit serve` writes it: the API, the CLI through it, the live page.

One server for the module, on loopback, fed the same records as a store
ingested from a file: every read command prints the same output on both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _fleet_helpers import HOSTILE, T0, hostile_run, write
from _server_helpers import TRACEKIT, Server, post, request, start
from test_dashboard import CHROMIUM, FLAGS

from tracekit.simulation.simulator import simulate
from tracekit.store import Store

ENV = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
_JSON = {"Content-Type": "application/json"}


def _call(
    url: str, *, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    if body is None:
        return request(url, headers)
    status, answer, _ = post(url, body, headers)
    return status, answer


def _sql(url: str, query: str) -> list[dict[str, Any]]:
    status, body = _call(
        f"{url}/api/sql", body=json.dumps({"query": query}).encode(), headers=_JSON
    )
    assert status == 200, body
    rows: list[dict[str, Any]] = json.loads(body)["rows"]
    return rows


def _post_records(url: str, path: Path) -> None:
    status, body = _call(
        f"{url}/v1/records",
        body=path.read_bytes(),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert status == 200, body


def _wait_for_runs(url: str, runs: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _sql(url, "SELECT count(*) AS n FROM runs")[0]["n"] >= runs:
            return
        time.sleep(0.2)
    raise AssertionError(f"the server did not store {runs} runs in {timeout} s")


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Server]]:
    base = tmp_path_factory.mktemp("serve-read")
    simulate(base / "fleet.jsonl", runs=60, seed=4)
    hand = write(base / "hand.jsonl", hostile_run("evil", t0=T0))
    free = base / "free.duckdb"
    with Store(free) as store:
        store.ingest([base / "fleet.jsonl", hand])
        runs = int(store.sql("SELECT count(*) AS n FROM runs")["n"][0])
    served = start(base / "served.duckdb")
    try:
        _post_records(served.url, base / "fleet.jsonl")
        _post_records(served.url, hand)
        _wait_for_runs(served.url, runs)
        yield free, served
    finally:
        assert served.stop() == 0, served.err


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRACEKIT, *args], capture_output=True, text=True, env=ENV, timeout=120)


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "--format", "json", "--limit", "500"],
        ["runs", "--status", "failed", "--limit", "500"],
        ["runs", "--agent", "billing", "--limit", "500"],
        [
            "sql",
            "SELECT run_id, agent, start_at, outcome FROM runs ORDER BY run_id",
            "--format",
            "csv",
        ],
        [
            "sql",
            "SELECT agent, count(*) AS calls, max(start_at) AS last FROM invocations GROUP BY agent ORDER BY agent",
        ],
        ["fleet", "--format", "json"],
        ["fleet", "--color", "never"],
        ["find", "triage ~> *", "--limit", "20"],
        ["find", "triage ~> billing", "--runs", "--json"],
    ],
    ids=lambda c: " ".join(c[:3]),
)
def test_a_read_command_prints_the_same_through_the_server(
    stores: tuple[Path, Server], command: list[str]
) -> None:
    free, served = stores
    direct = _run(*command, "--db", str(free))
    through = _run(*command, "--db", str(served.db))  # held: found by its sidecar
    assert direct.returncode == 0, direct.stderr
    assert through.returncode == 0, through.stderr
    assert _same(through.stdout) == _same(direct.stdout)
    assert through.stdout.strip()


def test_session_and_diff_print_the_same_through_the_server(stores: tuple[Path, Server]) -> None:
    free, served = stores
    with Store(free, read_only=True) as store:
        first, second = store.runs(limit=2)["run_id"]
        sessions = store.sql("SELECT session_id FROM runs WHERE session_id IS NOT NULL LIMIT 1")
    commands = [["diff", first, second], ["diff", first, "--against-fleet", "--rare", "50%"]]
    commands += [["session", str(s)] for s in sessions["session_id"]]
    for command in commands:
        direct = _run(*command, "--db", str(free))
        through = _run(*command, "--db", str(served.db))
        assert through.returncode == direct.returncode, (command, direct.stderr, through.stderr)
        assert through.stdout == direct.stdout.replace(str(free), str(served.db)), command


def _same(stdout: str) -> str:
    """The output, but for when each store classified its runs (the only difference)."""
    return re.sub(r'"classified_at": "[^"]*"', '"classified_at": ...', stdout)


def test_a_tree_prints_the_same_through_the_server(stores: tuple[Path, Server]) -> None:
    free, served = stores
    with Store(free, read_only=True) as store:
        run_ids = [*store.runs(limit=2)["run_id"], "evil"]
    for run_id in run_ids:
        direct = _run("tree", run_id, "--db", str(free), "--color", "never")
        through = _run("tree", run_id, "--server", served.url, "--color", "never")
        assert (through.returncode, through.stdout) == (direct.returncode, direct.stdout)
        assert direct.returncode == 0, direct.stderr


def test_an_unknown_run_is_a_clear_error_through_the_server(stores: tuple[Path, Server]) -> None:
    _, served = stores
    result = _run("tree", "no-such-run", "--db", str(served.db))
    assert result.returncode == 2
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.stderr
    status, body = _call(f"{served.url}/api/runs/no-such-run/tree")
    assert status == 404 and "no-such-run" in json.loads(body)["error"]


def test_tree_api_gives_json_and_text(stores: tuple[Path, Server]) -> None:
    free, served = stores
    status, body = _call(f"{served.url}/api/runs/evil/tree")
    assert status == 200
    assert json.loads(body)  # the JSON of `tracekit tree --json`
    status, text = _call(f"{served.url}/api/runs/evil/tree?format=text")
    direct = _run("tree", "evil", "--db", str(free), "--color", "never")
    assert status == 200 and text.decode() == direct.stdout
    assert "\x1b" not in text.decode()  # the terminal escape in a name is shown escaped


def test_sql_api_refuses_writes_files_and_runaway_queries(stores: tuple[Path, Server]) -> None:
    _, served = stores
    for query in (
        "DELETE FROM runs",
        "SELECT * FROM read_csv('/etc/passwd')",
        "COPY runs TO '/tmp/x.csv'",
        "ATTACH '/tmp/other.duckdb'",
    ):
        status, body = _call(
            f"{served.url}/api/sql",
            body=json.dumps({"query": query}).encode(),
            headers=_JSON,
        )
        assert status == 400, (query, body)
    status, body = _call(
        f"{served.url}/api/sql",
        body=json.dumps({"query": "SELECT * FROM range(100000)", "limit": 7}).encode(),
        headers=_JSON,
    )
    assert status == 200
    answer = json.loads(body)
    assert len(answer["rows"]) == 7 and answer["truncated"] is True
    status, body = _call(
        f"{served.url}/api/sql",
        body=json.dumps(
            {"query": "SELECT count(*) FROM range(10000000000) a", "timeout": 0.5}
        ).encode(),
        headers=_JSON,
    )
    assert status == 400 and "stopped after" in json.loads(body)["error"]
    assert _call(f"{served.url}/healthz")[0] == 200  # and the server goes on


def test_sql_replies_are_bounded_in_bytes_and_values(stores: tuple[Path, Server]) -> None:
    _, served = stores

    def ask(query: str) -> tuple[int, dict[str, Any]]:
        status, body = _call(
            f"{served.url}/api/sql", body=json.dumps({"query": query}).encode(), headers=_JSON
        )
        return status, json.loads(body)

    # 10,000 rows of 60 KB would be a 600 MB reply: it stops at 64 MiB of data.
    began = time.monotonic()
    status, answer = ask("SELECT repeat('x', 60000) AS blob FROM range(10000)")
    assert status == 200 and answer["truncated"] is True and answer["stopped"] == "bytes"
    assert len(answer["rows"]) > 500 and len(answer["rows"]) * 60_000 <= 64 << 20
    # One value of 2 GB is refused before it is built, and quickly.
    for query in (
        "SELECT length(repeat('x', 2000000000))",
        "SELECT length(lpad('x', 2000000000, 'y'))",
        "SELECT repeat('x', 1000000) FROM range(10000)",
    ):
        status, answer = ask(query)
        assert status == 400 and "would build a value over" in answer["error"], query
    status, answer = ask("SELECT length(system.main.repeat('x', 2000000000))")
    assert status == 400 and "system catalog" in answer["error"]
    assert time.monotonic() - began < 20
    status, answer = ask("SELECT repeat('ab', 3) AS small")
    assert status == 200 and answer["rows"] == [{"small": "ababab"}]
    # A 3 GB aggregate: stopped by DuckDB's own limit, or by the server's memory cap.
    began = time.monotonic()
    status, answer = ask("SELECT length(string_agg(repeat('x', 60000), '')) FROM range(50000)")
    assert (status, "Out of Memory" in answer["error"]) == (400, True) or (
        status == 503 and "memory passed" in answer["error"]
    ), answer
    assert time.monotonic() - began < 15
    assert _call(f"{served.url}/healthz")[0] == 200


def test_runs_api_filters(stores: tuple[Path, Server]) -> None:
    _, served = stores
    status, body = _call(f"{served.url}/api/runs?status=failed&limit=3")
    assert status == 200
    rows = json.loads(body)["rows"]
    assert 0 < len(rows) <= 3 and all(r["outcome"].startswith("failed") for r in rows)
    status, body = _call(f"{served.url}/api/runs?service=no-such-service")
    assert status == 400 and "no-such-service" in json.loads(body)["error"]


def _browser(tmp_path: Path, p: Any) -> Any:
    return p.chromium.launch_persistent_context(
        str(tmp_path / "profile"),
        executable_path=CHROMIUM,
        args=FLAGS,
        viewport={"width": 1400, "height": 900},
    )


@pytest.mark.browser
def test_live_page_updates_and_links_to_run_pages(
    stores: tuple[Path, Server], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    _, served = stores
    errors: list[str] = []
    with sync_playwright() as p:
        browser = _browser(tmp_path, p)
        try:
            view = browser.new_page()
            view.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.goto(served.url + "/")
            view.wait_for_function(
                "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4"
            )
            before = view.locator(".card .n").first.inner_text()
            assert view.get_by_text(HOSTILE, exact=False).count() > 0  # a name, as text
            # New runs arrive: the page shows them without a reload.
            more = write(tmp_path / "more.jsonl", hostile_run("late-run", t0=T0 + 1000))
            _post_records(served.url, more)
            view.wait_for_function(
                "b => document.querySelector('.card .n').textContent !== b", arg=before
            )
            view.wait_for_selector('a.run[href="/runs/late-run"]')
            view.click('a.run[href="/runs/late-run"]')
            view.wait_for_selector("text=Root cause")
            view.wait_for_function("document.querySelectorAll('#timeline .main-svg').length > 0")
            assert "late-run" in view.title()
        finally:
            browser.close()
    assert errors == []


@pytest.mark.browser
def test_live_page_filters_by_outcome(stores: tuple[Path, Server], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    _, served = stores
    with sync_playwright() as p:
        browser = _browser(tmp_path, p)
        try:
            view = browser.new_page()
            view.goto(served.url + "/?outcome=failed:recursion")
            view.wait_for_selector("text=Recent runs")
            outcomes = view.evaluate(
                """() => [...document.querySelectorAll('section')].find(s =>
                    s.querySelector('h2')?.textContent === 'Recent runs')
                    .querySelectorAll('tbody tr td:nth-child(5)')
                    .length"""
            )
            shown = view.evaluate(
                """() => [...[...document.querySelectorAll('section')].find(s =>
                    s.querySelector('h2')?.textContent === 'Recent runs')
                    .querySelectorAll('tbody tr td:nth-child(5)')].map(td => td.textContent)"""
            )
        finally:
            browser.close()
    assert outcomes > 0 and set(shown) == {"failed:recursion"}


def test_plotly_is_served_not_fetched(stores: tuple[Path, Server]) -> None:
    _, served = stores
    status, page = _call(served.url + "/")
    assert status == 200 and b'src="/static/plotly.min.js"' in page
    assert b"cdn" not in page.lower()
    status, js = _call(served.url + "/static/plotly.min.js")
    assert status == 200 and len(js) > 1_000_000


def test_dashboard_is_written_through_the_server(
    stores: tuple[Path, Server], tmp_path: Path
) -> None:
    _, served = stores
    out = tmp_path / "page.html"
    result = _run("dashboard", "--db", str(served.db), "--out", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    assert "<h1>Fleet health</h1>" in page and "<script>alert(1)</script>" not in page


def test_a_server_with_a_token_wants_it_from_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "locked.duckdb"
    served = start(db, "--token", "s3cret")
    try:
        refused = _run("runs", "--db", str(db))
        assert refused.returncode == 2 and "TRACEKIT_TOKEN" in refused.stderr
        assert served.get("/api/runs")[0] == 401
        allowed = subprocess.run(
            [TRACEKIT, "runs", "--db", str(db)],
            capture_output=True,
            text=True,
            env={**ENV, "TRACEKIT_TOKEN": "s3cret"},
            timeout=120,
        )
        assert allowed.returncode == 0, allowed.stderr
    finally:
        assert served.stop() == 0, served.err
