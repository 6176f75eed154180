"""``GET /metrics`` on a live ``tracekit serve``: scraped over loopback, read by Prometheus's parser.

The store is made by ``tracekit ingest`` of a small fleet (one run with a
service and agents named to break a text format), its ``loops`` rows added;
the exposition is compared with a golden and parsed with
``prometheus_client``'s own parser (the one its scrapers' tests use).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _loops_helpers import HOSTILE_AGENT, HOSTILE_CIRCLE, HOSTILE_SERVICE, hand_sum, loop_store
from _server_helpers import Server, post, request, simulate_otlp, start
from prometheus_client.parser import text_string_to_metric_families

GOLDEN = Path(__file__).parent / "golden" / "metrics" / "loops.prom"
TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(loop_store(tmp_path_factory.mktemp("metrics")), "--token", TOKEN)
    yield server
    assert server.stop() == 0, server.err


def _scrape(server: Server, headers: dict[str, str] | None = None) -> tuple[int, str]:
    status, body = request(server.url + "/metrics", {**AUTH, **(headers or {})})
    return status, body.decode("utf-8")


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample as Prometheus's parser reads it: (name, labels) to value."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _stable(text: str) -> str:
    """The exposition without the one number that moves with the clock."""
    return re.sub(r"(?m)^(tracekit_store_reading_age_seconds) .*$", r"\1 <age>", text)


def test_the_exposition_is_the_golden(served: Server) -> None:
    status, text = _scrape(served)
    assert status == 200
    assert _stable(text) == GOLDEN.read_text(encoding="utf-8")


def test_it_is_prometheus_text_with_the_format_version(served: Server) -> None:
    import urllib.request

    req = urllib.request.Request(served.url + "/metrics", headers=AUTH)
    with urllib.request.urlopen(req) as reply:
        assert reply.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        text = reply.read().decode()
    families = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert families["tracekit_runs"] == "gauge"
    assert families["tracekit_ingest_spans_received"] == "counter"  # the parser drops _total
    assert families["tracekit_loop_tokens"] == "gauge"
    assert text.endswith("\n")


def test_hostile_names_survive_the_parser(served: Server) -> None:
    """A quote, a line feed and a backslash in a service, agent and circle read back as written."""
    samples = _samples(_scrape(served)[1])
    key = ("tracekit_runs", (("outcome", "failed:recursion"), ("service", HOSTILE_SERVICE)))
    assert samples[key] == 1
    circle = ("tracekit_recursion_circle_runs", (("circle", HOSTILE_CIRCLE), ("outcome", "failed:recursion")))  # fmt: skip
    assert samples[circle] == 1
    tokens = (
        "tracekit_loop_tokens",
        (("circle", HOSTILE_CIRCLE), ("direction", "input"), ("stopped", "refused")),
    )
    assert samples[tokens] == 100
    assert HOSTILE_AGENT in HOSTILE_CIRCLE and "\n" in HOSTILE_SERVICE


def test_loop_cost_is_the_hand_sum(served: Server) -> None:
    samples = _samples(_scrape(served)[1])
    for stopped in ("finished", "silent"):
        expected = hand_sum("billing -> refunds -> billing", stopped)
        labels = (("circle", "billing -> refunds -> billing"), ("stopped", stopped))
        assert samples[("tracekit_loop_runs", labels)] == expected["runs"]
        assert samples[("tracekit_loop_model_calls", labels)] == expected["model_calls"]
        assert samples[("tracekit_loop_duration_seconds", labels)] == pytest.approx(
            expected["duration_ms"] / 1000
        )
        for direction in ("input", "output"):
            with_direction = tuple(sorted((*labels, ("direction", direction))))
            value = samples[("tracekit_loop_tokens", with_direction)]
            assert value == expected[f"{direction}_tokens"]


def test_metrics_keep_the_read_routes_rules(served: Server) -> None:
    """Bearer token, Host allow-list and same origin, as every read route."""
    assert request(served.url + "/metrics")[0] == 401
    assert request(served.url + "/metrics", {"Authorization": "Bearer wrong"})[0] == 401
    port = served.url.rsplit(":", 1)[1]
    assert _scrape(served, {"Host": f"attacker.example:{port}"})[0] == 421
    assert _scrape(served, {"Origin": "http://evil.example"})[0] == 403
    assert _scrape(served, {"Host": f"localhost:{port}"})[0] == 200


def test_ingest_counters_count_what_arrived(tmp_path: Path) -> None:
    """Spans received, rejected at the request, batches and stored; the backlog drains to 0."""
    docs = simulate_otlp(tmp_path / "fleet.jsonl", runs=3)
    server = start(tmp_path / "s.duckdb")
    try:
        sent = 0
        for doc in docs:
            status, _, _ = server.post(
                "/v1/traces", json.dumps(doc).encode(), {"Content-Type": "application/json"}
            )
            assert status == 200
            sent += sum(len(ss["spans"]) for rs in doc["resourceSpans"] for ss in rs["scopeSpans"])
        bad = _bad_span_doc()
        status, _, _ = post(server.url + "/v1/traces", bad, {"Content-Type": "application/json"})
        assert status == 200  # a partial success: the span is refused inside it
        server.wait_loaded(sent)
        samples = _samples(request(server.url + "/metrics")[1].decode())
    finally:
        assert server.stop() == 0, server.err
    otlp = (("source", "serve:otlp"),)
    assert samples[("tracekit_ingest_spans_received_total", otlp)] == sent + 1
    assert samples[("tracekit_ingest_spans_rejected_total", otlp)] == 1
    assert samples[("tracekit_ingest_batches_total", otlp)] == len(docs) + 1
    assert samples[("tracekit_ingest_spans_stored_total", ())] == sent
    assert samples[("tracekit_spool_backlog_bytes", ())] == 0
    assert samples[("tracekit_spool_backlog_batches", ())] == 0
    assert samples[("tracekit_store_writable", ())] == 1
    assert sum(v for (name, _), v in samples.items() if name == "tracekit_runs") == 3


def _bad_span_doc() -> bytes:
    span: dict[str, Any] = {
        "traceId": "0" * 32,  # all zero: refused inside an acknowledged batch
        "spanId": "00f067aa0ba902b7",
        "name": "invoke_agent x",
        "startTimeUnixNano": "1767225600000000000",
        "endTimeUnixNano": "1767225601000000000",
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def test_a_second_scrape_reads_no_store(served: Server) -> None:
    """Nothing stored between two scrapes: the second is sent the first's reading, older."""

    def age() -> float:
        return _samples(_scrape(served)[1])[("tracekit_store_reading_age_seconds", ())]

    first, second = age(), age()
    assert second > first


def test_the_docs_show_the_checked_prometheus_files() -> None:
    """docs/serve.md shows the scrape config and alert rule that promtool checks and tests."""
    root = Path(__file__).parent.parent
    page = (root / "docs" / "serve.md").read_text(encoding="utf-8")
    examples = root / "examples" / "prometheus"
    for name in ("prometheus.yml", "rules.yml"):
        assert f"```yaml\n{(examples / name).read_text(encoding='utf-8')}```" in page, name
    test = (examples / "rules_test.yml").read_text(encoding="utf-8")
    assert "alertname: TracekitRecursionRate" in test and "rules.yml" in test
    for metric in re.findall(r"\b(tracekit_[a-z_]+)\{", (examples / "rules.yml").read_text()):
        assert f"`{metric}`" in page, metric
