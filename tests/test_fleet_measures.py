"""Own time beside total time, and tokens by agent, in ``tracekit fleet`` and the dashboard."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _store_helpers import cli, line, write

from tracekit import Store
from tracekit.fleet import agent_latency, agent_tokens

EVIL = "<b>x</b>\x1b[2J"


def _run(n: int) -> list[str]:
    """front -> waiter (0..1000) -> slow (10..990); front -> quick (0..50); an evil agent."""
    run, t = f"r{n}", n * 10_000

    def call(inv: str, parent: str, agent: str, start: int, end: int, tokens: int) -> list[str]:
        return [
            line({"type": "enter", "ts": t + start, "invocationId": f"{run}-{inv}",
                  "runId": f"{run}/{inv}", "parentRunId": parent, "agent": agent}),
            line({"type": "exit", "ts": t + end, "invocationId": f"{run}-{inv}",
                  "runId": f"{run}/{inv}", "parentRunId": parent, "agent": agent,
                  "durationMs": end - start,
                  "usage": {"inputTokens": tokens, "outputTokens": tokens // 10}}),
        ]  # fmt: skip

    return [
        line({"type": "run.start", "ts": t, "runId": run, "agent": "front"}),
        *call("w", run, "waiter", 0, 1000, 100 + n),
        *call("s", f"{run}/w", "slow", 10 + n, 990, 1000 * (n + 1)),
        *call("q", run, "quick", 0, 50, 7),
        *call("e", run, EVIL, 0, 5, 3),
        line({"type": "run.end", "ts": t + 1001, "runId": run, "ok": True, "durationMs": 1001}),
    ]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fleet-measures")
    path = base / "f.duckdb"
    with Store(path) as store:
        store.ingest(write(base / "f.jsonl", [x for n in range(5) for x in _run(n)]))
    return path


def test_the_slow_agent_heads_the_latency_table_not_the_one_waiting(db: Path) -> None:
    with Store(db, read_only=True) as store:
        latency = agent_latency(store)
    assert latency["agent"].tolist()[:2] == ["slow", "quick"]
    rows = latency.set_index("agent")
    assert rows.loc["waiter", "p95_ms"] > rows.loc["slow", "p95_ms"]  # longest in total...
    assert rows.loc["waiter", "own_p95_ms"] < 40  # ...but it only waited
    assert rows.loc["slow", "own_p50_ms"] == rows.loc["slow", "p50_ms"]  # a leaf: own is all
    assert rows.loc["waiter", "own_p50_ms"] == 1000 - (990 - 12)  # median run n=2: slow 12..990


def test_tokens_by_agent_are_own_totals_and_medians(db: Path) -> None:
    with Store(db, read_only=True) as store:
        tokens = agent_tokens(store).set_index("agent")
    slow = [1000 * (n + 1) for n in range(5)]
    assert tokens.loc["slow", "input_tokens"] == sum(slow)
    assert tokens.loc["slow", "output_tokens"] == sum(s // 10 for s in slow)
    assert tokens.loc["slow", "median_input_tokens"] == 3000
    assert tokens.loc["waiter", "input_tokens"] == sum(100 + n for n in range(5))  # own only
    assert tokens.loc["quick", "calls"] == 5
    assert tokens.index[0] == "slow"


def test_fleet_text_and_json_show_own_time_and_tokens(db: Path) -> None:
    doc: dict[str, Any] = json.loads(cli("fleet", "--format", "json", db=db).stdout)
    latency = {r["agent"]: r for r in doc["latency"]}
    assert latency["slow"]["own_p95_ms"] is not None and "own_p50_ms" in latency["waiter"]
    tokens = {r["agent"]: r for r in doc["tokens"]}
    assert tokens["slow"]["input_tokens"] == 15_000 and tokens[EVIL]["input_tokens"] == 15
    text = cli("fleet", "--color", "never", db=db).stdout
    assert "own p95" in text and "Tokens by agent" in text and "median input" in text
    assert "\x1b" not in text and "<b>x</b>\\x1b[2J" in text


def test_the_dashboard_shows_own_time_and_tokens_escaped(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "d.html"
    cli("dashboard", "--out", str(out), db=db)
    page = out.read_text()
    assert "Own time by agent" in page and "Tokens by agent" in page
    assert ">15,000<" in page  # slow's input tokens
    assert "<b>x</b>" not in page and "\x1b" not in page
    assert "&lt;b&gt;x&lt;/b&gt;\\x1b[2J" in page
    assert re.search(
        r'<div class="l">runs</div><div class="n">[\d,]+</div><div class="s">[\d,]+ sessions?,',
        page,
    )
