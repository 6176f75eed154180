"""tracekit serve against Arize Phoenix: the same OTLP/HTTP load, side by side, in one run.

N exporter processes (default 4) each send batches of 512 agent spans as
OTLP protobuf (``POST /v1/traces``, what ``opentelemetry-exporter-otlp-proto-http``
sends) for ``--duration`` seconds, retrying on 429/503 as exporters do. The
spans are ``tracekit simulate --format otlp`` runs with GenAI attributes on
their model steps (model, token counts, a few hundred bytes of messages);
every batch gets fresh trace ids, so nothing is a duplicate.

Reported per server: spans/s acknowledged, spans/s stored and queryable
(until the store holds every acknowledged span), p50/p99 acknowledgement
latency, peak RSS, and tracekit's ratio to Phoenix.

Phoenix (``arize-phoenix``, its default SQLite store) runs from its own venv,
``bench/.venv-phoenix`` (create it with
``python3 -m venv bench/.venv-phoenix && bench/.venv-phoenix/bin/pip install arize-phoenix``);
without it only tracekit is measured.

Run: ``.venv/bin/python bench/bench_serve.py --duration 60``
(``--profile`` runs the tracekit server under cProfile and prints where the time goes).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACEKIT = ROOT / ".venv" / "bin" / "tracekit"
PHOENIX = ROOT / "bench" / ".venv-phoenix" / "bin" / "phoenix"
BATCH = 512


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the load -------------------------------------------------------------------
def template_batches(runs: int, seed: int) -> list[bytes]:
    """Simulated runs as OTLP protobuf requests of BATCH spans each (serialized templates)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sim.jsonl"
        subprocess.run(
            [
                str(TRACEKIT),
                "simulate",
                "--runs",
                str(runs),
                "--seed",
                str(seed),
                "--format",
                "otlp",
                "-o",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
        spans = []
        for line in out.read_text().splitlines():
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:
                service = rs["resource"]["attributes"][0]["value"]["stringValue"]
                for ss in rs["scopeSpans"]:
                    spans.extend((service, s) for s in ss["spans"])
    rng = random.Random(seed)
    traces: dict[str, list] = {}
    for service, raw in spans:
        traces.setdefault(raw["traceId"], []).append((service, raw))
    groups: list[list] = [[]]
    for trace in traces.values():  # whole, finished traces only, up to BATCH spans a request
        if not all(raw.get("endTimeUnixNano") for _, raw in trace):
            continue  # a run still going: the server holds it until it ends (or lingers)
        if len(groups[-1]) + len(trace) > BATCH and groups[-1]:
            groups.append([])
        groups[-1].extend(trace)
    batches = []
    for group in groups:
        request = ExportTraceServiceRequest()
        by_service: dict[str, object] = {}
        for service, raw in group:
            scope = by_service.get(service)
            if scope is None:
                rs = request.resource_spans.add()
                kv = rs.resource.attributes.add()
                kv.key, kv.value.string_value = "service.name", service
                scope = rs.scope_spans.add()
                scope.scope.name = "agents"
                by_service[service] = scope
            _add_span(scope.spans.add(), raw, rng)  # type: ignore[attr-defined]
        batches.append(request.SerializeToString())
    return batches


_MODELS = ["gpt-4o", "claude-sonnet-4", "gemini-2.0-flash", "llama-3.1-70b"]


def _add_span(span, raw: dict, rng: random.Random) -> None:
    span.trace_id = bytes.fromhex(raw["traceId"])
    span.span_id = bytes.fromhex(raw["spanId"])
    if raw.get("parentSpanId"):
        span.parent_span_id = bytes.fromhex(raw["parentSpanId"])
    span.name = raw["name"]
    span.kind = 1
    span.start_time_unix_nano = int(raw["startTimeUnixNano"])
    span.end_time_unix_nano = int(raw.get("endTimeUnixNano") or 0)
    for a in raw.get("attributes", []):
        kv = span.attributes.add()
        kv.key, kv.value.string_value = a["key"], str(next(iter(a["value"].values())))
    if raw.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR"):
        span.status.code = 2
        span.status.message = raw["status"].get("message", "")
    names = {a["key"] for a in raw.get("attributes", [])}
    if "gen_ai.operation.name" not in names:  # a model step: what GenAI instrumentation records
        for key, value in (
            ("gen_ai.system", "openai"),
            ("gen_ai.request.model", rng.choice(_MODELS)),
            (
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "content": "x" * rng.randint(100, 600)}]),
            ),
            (
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "content": "y" * rng.randint(50, 300)}]),
            ),
        ):
            kv = span.attributes.add()
            kv.key, kv.value.string_value = key, value
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            kv = span.attributes.add()
            kv.key, kv.value.int_value = key, rng.randint(10, 4000)


def exporter(url: str, batches: list[bytes], client: int, until: float, out: mp.Queue) -> None:
    """Send the batches round after round with fresh trace ids; retry 429/503 like an exporter."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    latencies: list[float] = []
    acked = retries = errors = 0
    round_ = 0
    while time.time() < until:
        ids: dict[bytes, bytes] = {}
        salt = int.from_bytes(
            hashlib.blake2b(bytes([client]) + round_.to_bytes(4, "big"), digest_size=8).digest(),
            "big",
        )
        for template in batches:
            if time.time() >= until:
                break
            request = ExportTraceServiceRequest.FromString(template)
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        new = ids.get(span.trace_id)
                        if new is None:
                            seed = span.trace_id + bytes([client]) + round_.to_bytes(4, "big")
                            new = ids[span.trace_id] = hashlib.blake2b(
                                seed, digest_size=16
                            ).digest()
                        span.trace_id = new
                        # Span ids are run ids (the root agent's): fresh ones too, or every
                        # round after the first would be duplicates of the first.
                        span.span_id = (int.from_bytes(span.span_id, "big") ^ salt).to_bytes(
                            8, "big"
                        )
                        if span.parent_span_id:
                            parent = int.from_bytes(span.parent_span_id, "big") ^ salt
                            span.parent_span_id = parent.to_bytes(8, "big")
            body = request.SerializeToString()
            t0 = time.perf_counter()
            while True:
                try:
                    conn.request(
                        "POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
                    )
                    reply = conn.getresponse()
                    reply.read()
                except (OSError, http.client.HTTPException):
                    errors += 1
                    if time.time() >= until:
                        reply = None
                        break
                    conn.close()
                    conn = http.client.HTTPConnection(host, int(port), timeout=60)
                    time.sleep(0.5)
                    continue
                if reply.status == 200:
                    break
                if reply.status in (429, 502, 503, 504):
                    if time.time() >= until:  # the window is over: this batch is not acknowledged
                        break
                    retries += 1
                    time.sleep(float(reply.getheader("Retry-After") or 1))
                    continue
                errors += 1
                break
            if reply is not None and reply.status == 200:
                latencies.append(time.perf_counter() - t0)
                acked += sum(
                    len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans
                )
        round_ += 1
    out.put({"acked": acked, "latencies": latencies, "retries": retries, "errors": errors})


def drive(url: str, batches: list[bytes], clients: int, duration: float) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    start = time.time()
    until = start + duration
    procs = [
        ctx.Process(target=exporter, args=(url, batches, i, until, queue)) for i in range(clients)
    ]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    lat = sorted(x for r in results for x in r["latencies"])
    return {
        "start": start,
        "end": time.time(),
        "acked": sum(r["acked"] for r in results),
        "retries": sum(r["retries"] for r in results),
        "errors": sum(r["errors"] for r in results),
        "p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
    }


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- the servers ------------------------------------------------------------------
def run_tracekit(batches: list[bytes], args: argparse.Namespace, work: Path) -> dict:
    port = free_port()
    db = work / "serve.duckdb"
    cmd = [str(TRACEKIT), "serve", "--db", str(db), "--port", str(port)]
    if args.profile:
        cmd = [
            str(ROOT / ".venv/bin/python"),
            "-m",
            "cProfile",
            "-o",
            str(work / "serve.prof"),
            str(TRACEKIT),
            *cmd[1:],
        ]
    server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    _wait_up(url + "/healthz", 60)
    load = drive(url, batches, args.clients, args.duration)
    status = {}
    while time.time() - load["end"] < 300:
        status = json.loads(_get(url + "/api/ingest"))
        if status["spans_loaded"] >= load["acked"] and status["queued_batches"] == 0:
            break
        time.sleep(0.25)
    stored_at = time.time()
    load["rss_mb"] = peak_rss_mb(server.pid)
    server.terminate()
    server.wait(120)
    load["stored"] = status["spans_loaded"]
    load["stored_end"] = stored_at
    load["detail"] = status["sources"]
    if args.profile:
        import pstats

        stats = pstats.Stats(str(work / "serve.prof"))
        stats.sort_stats("tottime").print_stats(25)
    return load


def run_phoenix(batches: list[bytes], args: argparse.Namespace, work: Path) -> dict | None:
    if not PHOENIX.exists():
        print(f"Phoenix is not installed ({PHOENIX} missing): measuring tracekit alone")
        return None
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work / "phoenix"),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(work / "phoenix.log", "w")  # noqa: SIM115 - Phoenix writes to it until it stops
    server = subprocess.Popen(
        [str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url + "/healthz", 600)
    except TimeoutError:
        server.kill()
        print("Phoenix did not start; see", work / "phoenix.log")
        return None
    load = drive(url, batches, args.clients, args.duration)
    database = work / "phoenix" / "phoenix.db"
    stored = 0
    while time.time() - load["end"] < args.phoenix_drain:
        stored = _phoenix_spans(database)
        if stored >= load["acked"]:
            break
        time.sleep(1)
    load["stored_end"] = time.time()
    load["stored"] = stored
    load["rss_mb"] = peak_rss_mb(server.pid)
    server.terminate()
    server.wait(60)
    return load


def _phoenix_spans(database: Path) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as con:
            return int(con.execute("SELECT count(*) FROM spans").fetchone()[0])
    except sqlite3.Error:
        return 0


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.read().decode()


def _wait_up(url: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            _get(url)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


def stage_costs(batches: list[bytes], work: Path) -> dict[str, float]:
    """CPU microseconds per span of each stage of the server's path, in this process.

    Process CPU time (DuckDB's threads included), so a busy machine inflates
    it less than wall time: decoding (protobuf to spans, checked), the spool's
    encoding, mapping spans to records, encoding the records, and the load
    (set-based ingest, derive, classify).
    """
    import msgspec

    from tracekit.events import encode_event
    from tracekit.intake.otlp.convert import OtlpConverter
    from tracekit.server.decode import decode_otlp_proto, span_of, spans_entry
    from tracekit.store import Store

    clock = time.process_time
    costs: dict[str, float] = {}
    t = clock()
    entries = [spans_entry(decode_otlp_proto(b), "serve:otlp") for b in batches]
    costs["decode"] = clock() - t
    spans = sum(len(e.spans) for e in entries)
    t = clock()
    encoder = msgspec.msgpack.Encoder()
    for e in entries:
        encoder.encode(e)
    costs["spool encode"] = clock() - t
    t = clock()
    converter = OtlpConverter()
    for e in entries:
        converter.feed_spans([span_of(row) for row in e.spans])
    pairs = converter.take(list(converter._traces))
    costs["map"] = clock() - t
    t = clock()
    lines = [encode_event(event) for _, event in pairs]
    costs["encode records"] = clock() - t
    with Store(work / "stages.duckdb") as store:
        store.ingest_records(lines[:100], source="warm")  # imports and first-use costs
        t = clock()
        store.ingest_records(lines, source="serve:otlp")
        costs["load (ingest, derive, classify)"] = clock() - t
    return {k: 1e6 * v / spans for k, v in costs.items()}


def report(name: str, r: dict, duration: float) -> dict:
    window = r["end"] - r["start"]
    row = {
        "server": name,
        "acked_per_s": r["acked"] / window,
        "stored_per_s": r["stored"] / (r["stored_end"] - r["start"]),
        "acked": r["acked"],
        "stored": r["stored"],
        "lost": r["acked"] - r["stored"],
        "p50_ms": r["p50_ms"],
        "p99_ms": r["p99_ms"],
        "rss_mb": r["rss_mb"],
        "retries": r["retries"],
        "errors": r["errors"],
    }
    print(
        f"{name:9} acked {row['acked_per_s']:9,.0f} spans/s  stored {row['stored_per_s']:9,.0f} spans/s"
        f"  ({row['stored']:,} of {row['acked']:,} acked)  p50 {row['p50_ms'] or 0:7.1f} ms"
        f"  p99 {row['p99_ms'] or 0:7.1f} ms  peak RSS {row['rss_mb']:6.0f} MB"
        f"  retries {row['retries']}  errors {row['errors']}"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=10.0, help="seconds of load (60 in BENCHMARKS.md)"
    )
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--runs", type=int, default=400, help="simulated runs behind the templates")
    parser.add_argument("--no-phoenix", action="store_true")
    parser.add_argument(
        "--phoenix-drain",
        type=float,
        default=120.0,
        help="seconds to wait for Phoenix to store what it acknowledged",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the tracekit server")
    args = parser.parse_args()
    batches = template_batches(args.runs, seed=7)
    print(
        f"{len(batches)} template batches of up to {BATCH} spans (whole traces), {args.clients} exporters, {args.duration:g} s"
    )
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        costs = stage_costs(batches, work)
        print(
            "CPU per span: "
            + ", ".join(f"{k} {v:.1f} us" for k, v in costs.items())
            + f"; total {sum(costs.values()):.1f} us = {1e6 / sum(costs.values()):,.0f} spans/s a core"
        )
        rows = [report("tracekit", run_tracekit(batches, args, work), args.duration)]
        if not args.no_phoenix:
            phoenix = run_phoenix(batches, args, work)
            if phoenix is not None:
                rows.append(report("phoenix", phoenix, args.duration))
                t, p = rows
                print(
                    f"ratio    acked {t['acked_per_s'] / max(p['acked_per_s'], 1e-9):.1f}x"
                    f"  stored {t['stored_per_s'] / max(p['stored_per_s'], 1e-9):.1f}x"
                )
        print(json.dumps(rows))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
