"""The ``loops`` table: what each circle cost equals a hand sum over its spans, in a real store.

Traces of agents handing control round a circle (a prefix of other agents,
a ring of two or three gone round one to four times, a framework's limit on
the root span or none) are written as OTLP JSON, ingested by the installed
``tracekit ingest``, and each run's row is compared with the sums taken
here, straight from the spans: the agent spans from the cycle's first entry
to the last, their model-call spans, those spans' tokens, and the time from
the first one's start to the last one's end.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

from _store_helpers import TRACEKIT

from tracekit.events import canonical_circle
from tracekit.store import Store, loop_circles, loops

_MS = 1_000_000  # nanoseconds
_PREFIX = ["desk", "router", "intake"]
_RINGS = [["triage", "billing"], ["billing", "refunds", "triage"], ["planner", "critic"]]
_LIMIT = ("GraphRecursionError", "Recursion limit of 25 reached without hitting a stop condition")


def _attr(key: str, value: str | int) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _agent_spans(trace: str, agents: list[str], rnd: random.Random, limit: bool) -> list[dict]:
    """Each agent hands to the next (a span under the last); each makes 0-2 model calls."""
    spans: list[dict[str, Any]] = []
    t0, parent, n = 1_700_000_000_000 * _MS, "", len(agents)
    for k, agent in enumerate(agents):
        sid = f"{rnd.getrandbits(64):016x}"
        start, end = t0 + k * 10 * _MS, t0 + (10 * n + (n - k) * rnd.randint(1, 5)) * _MS
        span = {
            "traceId": trace, "spanId": sid, "parentSpanId": parent,
            "name": f"invoke_agent {agent}", "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end), "status": {"code": 1},
            "attributes": [_attr("gen_ai.operation.name", "invoke_agent"),
                           _attr("gen_ai.agent.name", agent)],
        }  # fmt: skip
        if k == 0 and limit:
            span["status"] = {"code": 2, "message": _LIMIT[1]}
            span["attributes"].append(_attr("error.type", _LIMIT[0]))
        spans.append(span)
        for j in range(rnd.randint(0, 2)):
            spans.append({
                "traceId": trace, "spanId": f"{rnd.getrandbits(64):016x}", "parentSpanId": sid,
                "name": "chat scripted", "startTimeUnixNano": str(start + (j + 1) * 1000),
                "endTimeUnixNano": str(start + (j + 2) * 1000), "status": {"code": 1},
                "attributes": [_attr("gen_ai.operation.name", "chat"),
                               _attr("gen_ai.request.model", "scripted"),
                               _attr("gen_ai.usage.input_tokens", rnd.randint(1, 900)),
                               _attr("gen_ai.usage.output_tokens", rnd.randint(1, 300))],
            })  # fmt: skip
        parent = sid
    return spans


def _hand_sum(spans: list[dict], first: int) -> dict[str, Any]:
    """The cost of the agent spans from the ``first``-th on, summed from the spans themselves."""
    agents = [s for s in spans if s["name"].startswith("invoke_agent")][first:]
    ids = {s["spanId"] for s in agents}
    chats = [s for s in spans if s["parentSpanId"] in ids and s["name"].startswith("chat")]

    def usage(span: dict, key: str) -> int:
        return next(int(a["value"]["intValue"]) for a in span["attributes"] if a["key"] == key)

    start = min(int(s["startTimeUnixNano"]) for s in agents)
    end = max(int(s["endTimeUnixNano"]) for s in agents)
    return {
        "invocations": len(agents),
        "model_calls": len(chats),
        "input_tokens": sum(usage(c, "gen_ai.usage.input_tokens") for c in chats) or None,
        "output_tokens": sum(usage(c, "gen_ai.usage.output_tokens") for c in chats) or None,
        "duration_ms": (end - start) / _MS,
    }


def test_each_circles_cost_is_the_hand_sum_over_its_spans(tmp_path: Path) -> None:
    rnd = random.Random(29)
    lines, expected = [], {}
    for n in range(24):
        trace = f"{n + 1:032x}"
        prefix = _PREFIX[: rnd.randint(1, 3)]
        ring, rounds, limit = rnd.choice(_RINGS), rnd.randint(1, 4), rnd.random() < 0.5
        spans = _agent_spans(trace, [*prefix, *ring * rounds, ring[0]], rnd, limit)
        lines.append(json.dumps({"resourceSpans": [{
            "resource": {"attributes": [_attr("service.name", "desk")]},
            "scopeSpans": [{"scope": {"name": "loops"}, "spans": spans}]}]}))  # fmt: skip
        if limit or rounds >= 3:
            stopped = "limit" if limit else "finished"
            row = {"circle": canonical_circle([*ring, ring[0]]), "revisits": rounds,
                   "stopped": stopped, **_hand_sum(spans, len(prefix))}  # fmt: skip
            expected[spans[0]["spanId"]] = row
    trace_file = tmp_path / "loops.otlp.json"
    trace_file.write_text("\n".join(lines) + "\n")
    db = tmp_path / "fleet.duckdb"
    done = subprocess.run(
        [TRACEKIT, "ingest", str(trace_file), "--db", str(db)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    with Store(db, read_only=True) as store:
        rows = {row.run_id: row._asdict() for row in loops(store)}
        circles = loop_circles(store)
        outcomes = dict(store.con.execute("SELECT run_id, outcome FROM runs").fetchall())
    assert {run: {k: row[k] for k in expected[run]} for run, row in rows.items()} == expected
    assert {outcomes[run] for run, row in expected.items() if row["stopped"] == "limit"} == {
        "failed:recursion"
    }
    assert {outcomes[run] for run, row in expected.items() if row["stopped"] == "finished"} == {
        "ok"
    }
    assert sum(c.runs for c in circles) == len(expected)
    assert sum(c.input_tokens or 0 for c in circles) == sum(
        r["input_tokens"] or 0 for r in expected.values()
    )


def test_classifying_again_rebuilds_the_rows_never_doubles_them(tmp_path: Path) -> None:
    rnd = random.Random(7)
    spans = _agent_spans("c" * 32, ["desk", *["triage", "billing"] * 3, "triage"], rnd, True)
    trace_file = tmp_path / "loop.otlp.json"
    body = {"resourceSpans": [{"resource": {"attributes": []},
            "scopeSpans": [{"scope": {"name": "loops"}, "spans": spans}]}]}  # fmt: skip
    trace_file.write_text(json.dumps(body) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(trace_file)
        before = store.loops()
        store.con.execute("UPDATE runs SET classified_at = NULL")
        from tracekit.store.classify import classify_store

        classify_store(store)
        after = store.loops()
    assert len(before) == 1 and before.to_dict("records") == after.to_dict("records")
    assert before.stopped[0] == "limit" and before.limit_code[0] == "GraphRecursionError"
