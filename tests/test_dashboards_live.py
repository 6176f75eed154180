"""The live page of `tracekit serve` and the pages the server keeps: an unknown filter explained
beside the filters with the known values, the numbers greyed while they do not apply, typing
debounced (a real browser counts the requests), and pages kept until the store changes."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_helpers import T0, hostile_run, write
from _server_helpers import Server, post, start
from test_dashboard import CHROMIUM, FLAGS

from tracekit.simulation.simulator import simulate

_RUNS = re.compile(rb'<div class="l">runs</div><div class="n">([\d,]+)</div>')


def _post(served: Server, path: Path) -> None:
    status, body, _ = post(
        f"{served.url}/v1/records", path.read_bytes(), {"Content-Type": "application/x-ndjson"}
    )
    assert status == 200, body


def _runs_on(page: bytes) -> int:
    found = _RUNS.search(page)
    assert found is not None
    return int(found.group(1).replace(b",", b""))


def _wait(served: Server, path: str, pattern: bytes, timeout: float = 60) -> bytes:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = served.get(path)
        if status == 200 and pattern in body:
            return body
        time.sleep(0.3)
    raise AssertionError(f"{path} never showed {pattern!r}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("live")
    simulate(base / "fleet.jsonl", runs=40, seed=5)
    server = start(base / "served.duckdb")
    try:
        _post(server, base / "fleet.jsonl")
        _wait(server, "/api/dashboard", b'<div class="l">runs</div><div class="n">40</div>')
        yield server
    finally:
        assert server.stop() == 0, server.err


def test_pages_are_kept_until_the_store_changes(served: Server, tmp_path: Path) -> None:
    first = served.get("/api/dashboard")[1]
    live = served.get("/api/live")[1]
    assert served.get("/api/dashboard")[1] == first and served.get("/api/live")[1] == live
    before = _runs_on(first)
    _post(served, write(tmp_path / "late.jsonl", hostile_run("late-run", t0=T0 + 5000)))
    after = _wait(served, "/api/dashboard", f'<div class="n">{before + 1}</div>'.encode())
    assert _runs_on(after) == before + 1  # a new batch: built again, never the stale page
    assert served.get("/api/live")[1] != live and b"late-run" in served.get("/api/live")[1]


def test_an_unknown_filter_is_a_clear_error_through_the_api(served: Server) -> None:
    status, body = served.get("/api/live?service=no-such-service")
    assert status == 400 and b"no run has service 'no-such-service'" in body
    assert b"Known services:" in body


@pytest.mark.browser
def test_browser_explains_an_unknown_service_and_greys_the_numbers(
    served: Server, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    asked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        try:
            view = browser.new_page()
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.on("request", lambda r: asked.append(r.url) if "/api/live" in r.url else None)
            view.goto(served.url + "/")
            view.wait_for_selector(".card .n")
            box = view.locator("input[name=service]")
            asked.clear()
            box.press_sequentially("support-deskk", delay=40)  # 13 keystrokes, typed quickly
            view.wait_for_selector("#notice:not([hidden])")
            notice = view.locator("#notice").inner_text()
            typed = [u for u in asked if "service=" in u]
            stale = view.evaluate("document.getElementById('content').classList.contains('stale')")
            grey = view.evaluate("getComputedStyle(document.getElementById('content')).opacity")
            box.fill("")
            view.wait_for_selector("#notice", state="hidden")
            cleared = view.evaluate(
                "document.getElementById('content').classList.contains('stale')"
            )
        finally:
            browser.close()
    assert errors == []
    assert notice.startswith("No run has service 'support-deskk'.")
    assert "Did you mean 'support-desk'?" in notice
    assert "Known services:" in notice and "{" not in notice  # a sentence, not raw JSON
    assert stale and float(grey) < 0.5 and not cleared
    # debounced: a request once typing pauses (13 keystrokes, at most 3 requests; a loaded
    # machine may stall a keystroke past the pause), the last for the whole name
    assert typed and "service=support-deskk" in typed[-1] and len(typed) <= 3, typed


def test_a_long_list_of_degraded_runs_is_cut_on_the_live_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.dashboards import live
    from tracekit.store import Store

    monkeypatch.setattr(live, "_RECENT_RUNS", 5)  # a small cap, so a small fleet passes it
    simulate(tmp_path / "f.jsonl", runs=300, seed=9)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(tmp_path / "f.jsonl")
        sql = "SELECT count(*) AS n FROM runs WHERE outcome = 'degraded'"
        degraded = int(store.sql(sql)["n"][0])
        body = live.live_content(store, version="1")["html"]
    assert degraded > 5 and f"The newest 5 of {degraded}:" in body
    assert "5 degraded runs</p>" in body and "tracekit runs --status degraded" in body
