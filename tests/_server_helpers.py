"""Helpers for the server tests: ``tracekit serve`` in a subprocess on a free port, spans to send."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRACEKIT = str(Path(sys.executable).parent / "tracekit")


@dataclass
class Server:
    """A running ``tracekit serve``: its process, URL and store."""

    proc: subprocess.Popen[str]
    db: Path
    url: str
    pid: int

    err: str = ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Signal the server and wait for it; its exit status (its stderr in ``err``)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
        self.err = self.proc.communicate(timeout=timeout)[1]
        return self.proc.returncode

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        return request(self.url + path, headers=headers)

    def post(
        self, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, dict[str, str]]:
        return post(self.url + path, body, headers)

    def wait_loaded(self, spans: int, timeout: float = 30) -> dict[str, Any]:
        """Wait until the loader has stored ``spans`` spans and derived their traces; the status."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = json.loads(self.get("/api/ingest")[1])
            # "loading": taken from the queue for a load not yet committed
            idle = status["queued_batches"] == 0 and status.get("loading", 0) == 0
            idle = idle and status.get("pending_spans", 0) == 0  # every trace derived
            if status["spans_loaded"] >= spans and idle:
                return status
            time.sleep(0.1)
        raise AssertionError(f"not loaded in {timeout} s: {status}")


def start(db: Path, *args: str, timeout: float = 60) -> Server:
    """Start ``tracekit serve --db DB --port 0 ARGS`` and wait for its sidecar."""
    sidecar = db.with_name(db.name + ".server.json")
    sidecar.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [TRACEKIT, "serve", "--db", str(db), "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited {proc.returncode}: {proc.communicate()[1]}")
        if sidecar.exists():
            info = json.loads(sidecar.read_text())
            if info["pid"] == proc.pid:
                return Server(proc, db, info["url"], proc.pid)
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    raise AssertionError("the server did not start")


def request(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def post(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    req = urllib.request.Request(url, body, headers or {}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read(), {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), {k.lower(): v for k, v in exc.headers.items()}


def simulate_otlp(path: Path, runs: int, seed: int = 3) -> list[dict[str, Any]]:
    """``tracekit simulate --format otlp`` into ``path``; its documents."""
    subprocess.run(
        [
            TRACEKIT,
            "simulate",
            "--runs",
            str(runs),
            "--seed",
            str(seed),
            "--format",
            "otlp",
            "--start",
            "2026-01-01T00:00:00Z",
            "-o",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return [json.loads(line) for line in path.read_text().splitlines()]


def spans_of(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every span of the documents with its service name."""
    out = []
    for doc in docs:
        for rs in doc["resourceSpans"]:
            attrs = {a["key"]: a["value"] for a in rs.get("resource", {}).get("attributes", [])}
            service = attrs.get("service.name", {}).get("stringValue", "")
            for ss in rs["scopeSpans"]:
                out.extend((service, span) for span in ss["spans"])
    return out


def readable_spans(spans: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The spans as the OpenTelemetry SDK's ``ReadableSpan``: what its exporters are given."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    out = []
    resources: dict[str, Resource] = {}
    for service, raw in spans:
        trace = int(raw["traceId"], 16)
        ctx = SpanContext(trace, int(raw["spanId"], 16), False, TraceFlags(1))
        parent = None
        if raw.get("parentSpanId"):
            parent = SpanContext(trace, int(raw["parentSpanId"], 16), False, TraceFlags(1))
        attrs = {a["key"]: next(iter(a["value"].values())) for a in raw.get("attributes", [])}
        status = raw.get("status") or {}
        code = (
            StatusCode.ERROR if status.get("code") in (2, "STATUS_CODE_ERROR") else StatusCode.UNSET
        )
        events = [
            Event(
                e["name"],
                {a["key"]: next(iter(a["value"].values())) for a in e.get("attributes", [])},
                int(e.get("timeUnixNano", 0)),
            )
            for e in raw.get("events", [])
        ]
        resource = resources.setdefault(service, Resource({"service.name": service}))
        end = raw.get("endTimeUnixNano")
        out.append(
            ReadableSpan(
                name=raw["name"],
                context=ctx,
                parent=parent,
                resource=resource,
                attributes=attrs,
                events=events,
                kind=SpanKind.INTERNAL,
                status=Status(code, status.get("message") if code == StatusCode.ERROR else None),
                start_time=int(raw["startTimeUnixNano"]),
                end_time=int(end) if end else None,
            )
        )
    return out


def by_trace(
    spans: list[tuple[str, dict[str, Any]]], parts: int
) -> list[list[tuple[str, dict[str, Any]]]]:
    """The spans split into ``parts`` groups of whole traces."""
    traces: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for item in spans:
        traces.setdefault(item[1]["traceId"], []).append(item)
    groups: list[list[tuple[str, dict[str, Any]]]] = [[] for _ in range(parts)]
    for i, trace in enumerate(traces.values()):
        groups[i % parts].extend(trace)
    return groups


def otlp_json(spans: list[tuple[str, dict[str, Any]]]) -> bytes:
    """One OTLP/JSON request holding the spans."""
    by_service: dict[str, list[dict[str, Any]]] = {}
    for service, raw in spans:
        by_service.setdefault(service, []).append(raw)
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": s}}]},
                "scopeSpans": [{"spans": group}],
            }
            for s, group in by_service.items()
        ]
    }
    return json.dumps(doc).encode()


def control_body(n: int) -> bytes:
    """One trace of one agent span whose run id is ``control-N``: sent after an attack."""
    span = {
        "traceId": f"c0{n:030x}",
        "spanId": f"c0{n:014x}",
        "name": "invoke_agent control",
        "startTimeUnixNano": str(1700000000000000000 + n),
        "endTimeUnixNano": str(1700000001000000000 + n),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "control"}},
            {"key": "tracekit.run_id", "value": {"stringValue": f"control-{n}"}},
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def send_control(server: Server, n: int, timeout: float = 60) -> None:
    """Send the control trace ``n`` and wait (polling) until its run is in the store."""
    status, body, _ = server.post(
        "/v1/traces", control_body(n), {"Content-Type": "application/json"}
    )
    assert status == 200, (status, body)
    deadline = time.monotonic() + timeout
    got: tuple[int, bytes] = (0, b"")
    while time.monotonic() < deadline:
        got = server.get(f"/api/runs/control-{n}/tree")
        if got[0] == 200:
            return
        time.sleep(0.2)
    raise AssertionError(f"control trace {n} not stored within {timeout} s: {got}")
