"""Web pages and foreign names: DNS rebinding and cross-origin requests are refused before routing.

A real server on loopback; the attacks are plain requests with a foreign
``Host`` or ``Origin``, and a headless Chromium that loads a page from another
origin (and one whose name resolves to 127.0.0.1) and sends what it may.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _server_helpers import Server, post, request, start
from test_dashboard import CHROMIUM, FLAGS

SQL = json.dumps({"query": "SELECT 42 AS answer"}).encode()
JSON = {"Content-Type": "application/json"}
SPANS = b'{"resourceSpans": []}'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(tmp_path_factory.mktemp("guard") / "g.duckdb", "--allow-host", "tk.internal")
    yield server
    assert server.stop() == 0, server.err


def _port(server: Server) -> str:
    return server.url.rsplit(":", 1)[1]


def _calls(server: Server, headers: dict[str, str]) -> list[tuple[str, int]]:
    u = server.url
    return [
        ("/", request(u + "/", headers)[0]),
        ("/api/runs", request(u + "/api/runs", headers)[0]),
        ("/api/ingest", request(u + "/api/ingest", headers)[0]),
        ("/api/sql", post(u + "/api/sql", SQL, {**JSON, **headers})[0]),
        ("/v1/traces", post(u + "/v1/traces", SPANS, {**JSON, **headers})[0]),
    ]


def test_a_foreign_host_is_refused_on_every_endpoint(served: Server) -> None:
    port = _port(served)
    foreign = _calls(served, {"Host": f"attacker.example:{port}"})
    assert foreign == [(path, 421) for path, _ in foreign]
    for name in ("localhost", "127.0.0.1", "tk.internal"):
        allowed = _calls(served, {"Host": f"{name}:{port}"})
        assert allowed == [(path, 200) for path, _ in allowed], name
    status, body = request(served.url + "/api/runs", {"Host": "attacker.example"})
    assert (
        status == 421
        and "attacker.example" in json.loads(body)["message"]
        and "--allow-host" in str(body)
    )


def test_a_foreign_origin_is_refused_and_sql_takes_only_json(served: Server) -> None:
    port = _port(served)
    refused = _calls(served, {"Origin": "http://evil.example"})
    assert refused == [(path, 403) for path, _ in refused]
    assert _calls(served, {"Origin": "null"})[3] == ("/api/sql", 403)
    same = {"Origin": f"http://127.0.0.1:{port}"}
    assert post(served.url + "/api/sql", SQL, {**JSON, **same})[0] == 200
    for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        status, body, _ = post(served.url + "/api/sql", b"SELECT 42", {"Content-Type": media})
        assert status == 415 and "application/json" in json.loads(body)["hint"], media
    assert request(served.url + "/healthz", {"Origin": "http://evil.example"})[0] == 200


def _browser(tmp_path: Path, p: Any, port: str) -> Any:
    rules = "--host-resolver-rules=MAP rebind.test 127.0.0.1"
    # Chromium's own guard for pages reaching loopback (Private Network Access)
    # is off: the server must refuse on its own, as it must for other browsers.
    pna = (
        "--disable-features=PrivateNetworkAccessSendPreflights,"
        "PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests,"
        "LocalNetworkAccessChecks"
    )
    return p.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, args=[*FLAGS, rules, pna]
    )


@pytest.mark.browser
def test_a_page_of_another_origin_cannot_make_the_server_work(
    served: Server, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    port = _port(served)
    seen: list[tuple[str, int]] = []
    attack = f"""async () => {{
        const target = "http://127.0.0.1:{port}";
        const send = async (path, body) => {{
            try {{
                await fetch(target + path, {{method: "POST", mode: "no-cors",
                    headers: {{"Content-Type": "text/plain"}}, body}});
                return "answered";
            }} catch (e) {{ return "failed"; }}
        }};
        return [await send("/api/sql", "SELECT 42"),
                await send("/api/sql", '{{"query": "SELECT 42"}}'),
                await send("/v1/records", "{{}}")];
    }}"""
    with sync_playwright() as p:
        browser = _browser(tmp_path, p, port)
        try:
            page = browser.new_page()
            page.on("response", lambda r: seen.append((r.url.split(port)[-1], r.status)))
            page.route(
                "http://evil.test/",
                lambda route: route.fulfill(body="<p>hello</p>", content_type="text/html"),
            )
            page.goto("http://evil.test/")
            assert page.evaluate(attack) == ["answered"] * 3
            # A name made to resolve to loopback (DNS rebinding): the server does not answer it.
            answer = page.goto(f"http://rebind.test:{port}/api/runs")
            assert answer is not None and answer.status == 421
        finally:
            browser.close()
    api = [(path, status) for path, status in seen if path.startswith(("/api", "/v1"))]
    assert api == [("/api/sql", 403), ("/api/sql", 403), ("/v1/records", 403), ("/api/runs", 421)]
