"""tracekit serve against Arize Phoenix: the same OTLP/HTTP load, side by side, in one run.

N exporter processes (default 4) each send batches of 512 agent spans as
OTLP protobuf (``POST /v1/traces``, what ``opentelemetry-exporter-otlp-proto-http``
sends) for ``--duration`` seconds, retrying on 429/503 as exporters do. The
spans are ``tracekit simulate --format otlp`` runs with GenAI attributes on
their model steps (model, token counts, a few hundred bytes of messages);
every batch gets fresh trace ids, so nothing is a duplicate.

Reported per server: spans/s acknowledged, spans/s stored and queryable
(until the store holds every acknowledged span), p50/p99 acknowledgement
latency, peak RSS, and tracekit's ratio to Phoenix; and how far derivation
is behind: the lag during the load (``derive_lag_s`` of ``/api/ingest``,
sampled every second: seconds since the oldest trace not derived yet gained
its last span), the most spans waiting to be derived, and how long after the
load every trace is derived. ``--rate N`` paces the clients to N spans/s in
all: the soak is ``--rate 20000 --duration 600``.

Phoenix (``arize-phoenix``, its default SQLite store) runs from its own venv,
``bench/.venv-phoenix`` (create it with
``python3 -m venv bench/.venv-phoenix && bench/.venv-phoenix/bin/pip install arize-phoenix``);
without it only tracekit is measured.

Run: ``.venv/bin/python bench/bench_serve.py --duration 60``
(``--profile`` runs the tracekit server under cProfile and prints where the time goes;
``--baseline DIR`` first runs the server of another checkout, e.g. ``../main-baseline`` (a worktree of main: ``git worktree add --detach ../main-baseline main``), under the
same load; ``--rss-every S`` samples the server's resident memory, its worker processes
included, and prints the curve). At the end the store is opened and counted: its events
and runs must be what the acknowledged batches map to (the same batches ingested once
each, in this process), or the run says how many are missing.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The command of the venv running this script (a worktree has no .venv of its own).
TRACEKIT = Path(sys.executable).parent / "tracekit"
if not TRACEKIT.exists():
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


def exporter(
    url: str, batches: list[bytes], client: int, until: float, out: mp.Queue, rate: float = 0.0
) -> None:
    """Send the batches round after round with fresh trace ids; retry 429/503 like an exporter.

    ``rate``: spans a second this client sends at most (0: as fast as it is answered).
    """
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    latencies: list[float] = []
    acked = retries = errors = 0
    per_template = [0] * len(batches)
    round_ = 0
    sent_spans = 0
    began = time.time()
    while time.time() < until:
        ids: dict[bytes, bytes] = {}
        salt = int.from_bytes(
            hashlib.blake2b(bytes([client]) + round_.to_bytes(4, "big"), digest_size=8).digest(),
            "big",
        )
        for index, template in enumerate(batches):
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
            if rate:  # paced: this batch leaves when the spans sent so far are due
                sent_spans += sum(
                    len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans
                )
                time.sleep(max(0.0, began + sent_spans / rate - time.time()))
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
                per_template[index] += 1
                acked += sum(
                    len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans
                )
        round_ += 1
    out.put(
        {
            "acked": acked,
            "latencies": latencies,
            "retries": retries,
            "errors": errors,
            "per_template": per_template,
        }
    )


def drive(url: str, batches: list[bytes], clients: int, duration: float, rate: float = 0.0) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    start = time.time()
    until = start + duration
    procs = [
        ctx.Process(target=exporter, args=(url, batches, i, until, queue, rate / clients))
        for i in range(clients)
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
        "per_template": [
            sum(col) for col in zip(*(r["per_template"] for r in results), strict=True)
        ],
        "p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
    }


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _tree(pid: int) -> list[int]:
    """The process and its descendants (a server's worker processes count as its memory)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return found


def tree_rss_mb(pid: int, each: dict[str, float] | None = None) -> float:
    """Resident memory of the process and its descendants now, in MB (``each``: max by name)."""
    total = 0.0
    for one in _tree(pid):
        try:
            status = Path(f"/proc/{one}/status").read_text().splitlines()
            cmdline = Path(f"/proc/{one}/cmdline").read_bytes()
            comm = Path(f"/proc/{one}/comm").read_text().strip()
        except OSError:
            continue
        for line in status:
            if line.startswith("VmRSS:"):
                mb = int(line.split()[1]) / 1024
                total += mb
                if each is not None:
                    name = _role(comm, cmdline)
                    each[name] = max(each.get(name, 0.0), mb)
    return total


def _role(comm: str, cmdline: bytes) -> str:
    if comm.startswith("tracekit-"):
        return comm.removeprefix("tracekit-") + " process"  # it names itself
    if b"spawn_main" in cmdline:
        return "worker process"
    if b"resource_tracker" in cmdline:
        return "resource tracker"
    if b"py-spy" in cmdline:
        return "py-spy"
    return "server"


class LagSampler:
    """Samples how far derivation is behind (``/api/ingest``) every second, on a thread.

    ``derive_lag_s``: seconds since the oldest trace not derived yet gained its
    last span (servers that do not say so: None); ``pending_spans``: spans
    stored whose trace is not derived yet.
    """

    def __init__(self, url: str) -> None:
        import threading

        self.url = url
        self.samples: list[tuple[float, float | None, int]] = []
        self._stop = threading.Event()
        self._t0 = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            with contextlib.suppress(OSError, ValueError):
                status = json.loads(_get(self.url + "/api/ingest"))
                self.samples.append(
                    (time.time(), status.get("derive_lag_s"), int(status.get("pending_spans", 0)))
                )

    def stop(self) -> list[tuple[float, float | None, int]]:
        self._stop.set()
        self._thread.join()
        return self.samples


class RssSampler:
    """Samples a process tree's resident memory every few seconds, on a thread."""

    def __init__(self, pid: int, every: float) -> None:
        import threading

        self.pid, self.every = pid, every
        self.samples: list[tuple[float, float]] = []
        self.each: dict[str, float] = {}  # the largest sample of each process
        self._stop = threading.Event()
        self._t0 = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append((time.time() - self._t0, tree_rss_mb(self.pid, self.each)))

    def stop(self) -> list[tuple[float, float]]:
        self._stop.set()
        self._thread.join()
        return self.samples


# -- the servers ------------------------------------------------------------------
def run_tracekit(
    batches: list[bytes], args: argparse.Namespace, work: Path, code: Path | None = None
) -> dict:
    """One ``tracekit serve`` under the load; ``code`` is the checkout it runs (else this one)."""
    port = free_port()
    db = work / f"serve-{'base' if code else 'this'}.duckdb"
    cmd = [str(TRACEKIT), "serve", "--db", str(db), "--port", str(port)]
    if args.profile and code is None:
        cmd = [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(work / "serve.prof"),
            str(TRACEKIT),
            *cmd[1:],
        ]
    if args.py_spy and code is None:  # every thread and the mapping process, native frames too
        spy = Path(sys.executable).parent / "py-spy"
        cmd = [str(spy), "record", "--subprocesses", "--nonblocking", "--format", "raw",
               "-r", "50", "-o", str(args.py_spy), "--", *cmd]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(code or ROOT)}
    server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    _wait_up(url + "/healthz", 60)
    sampler = RssSampler(server.pid, args.rss_every)
    lags = LagSampler(url)
    load = drive(url, batches, args.clients, args.duration, args.rate)
    status = {}
    while time.time() - load["end"] < 300:
        status = json.loads(_get(url + "/api/ingest"))
        if status["spans_loaded"] >= load["acked"] and status["queued_batches"] == 0:
            break
        time.sleep(0.25)
    stored_at = time.time()
    while time.time() - load["end"] < args.derive_wait:  # derivation catching up
        if json.loads(_get(url + "/api/ingest"))["pending_spans"] == 0:
            break
        time.sleep(0.25)
    load["derived_end"] = time.time()
    # The CPU by stage once derivation is over (or the wait is), not when the spans were stored.
    status = json.loads(_get(url + "/api/ingest")) or status
    load["lags"] = lags.stop()
    load["rss_curve"] = sampler.stop()
    load["rss_each"] = sampler.each
    load["rss_mb"] = max([peak_rss_mb(server.pid), *(mb for _, mb in load["rss_curve"])])
    load["stages"] = status.get("stage_cpu_s")
    # Under py-spy the server is its child: stop the server, py-spy then writes and exits.
    for pid in _tree(server.pid)[1:2] if args.py_spy and code is None else [server.pid]:
        os.kill(pid, signal.SIGTERM)
    _, err = server.communicate(timeout=300)
    if server.returncode != 0:
        print(err[-3000:])
    load["stored"] = status["spans_loaded"]
    load["stored_end"] = stored_at
    load["detail"] = status["sources"]
    load["counted"] = _count_store(db)
    if args.profile and code is None:
        import pstats

        stats = pstats.Stats(str(work / "serve.prof"))
        stats.sort_stats("tottime").print_stats(25)
    return load


def _count_store(db: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        events = con.execute("SELECT count(*) FROM events").fetchone()[0]
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        dups = con.execute("SELECT coalesce(sum(duplicates), 0) FROM ingest_log").fetchone()[0]
        spans = con.execute("SELECT count(*) FROM spans").fetchone()[0]
        underived = con.execute(
            "SELECT count(*) FROM (SELECT trace_id, count(*) AS n FROM spans GROUP BY 1) s"
            " LEFT JOIN derivations d USING (trace_id) WHERE d.spans IS DISTINCT FROM s.n"
        ).fetchone()[0]
    finally:
        con.close()
    return {
        "events": int(events),
        "runs": int(runs),
        "duplicates": int(dups),
        "spans": int(spans),
        "underived": int(underived),
    }


def expected_counts(batches: list[bytes], work: Path) -> list[tuple[int, int]]:
    """Events and runs each template batch gives, ingested alone (ids are fresh each round)."""
    from tracekit.intake.otlp.received import rows_table
    from tracekit.server.decode import received_otlp_proto, spans_entry
    from tracekit.store import Store

    out = []
    for i, body in enumerate(batches):
        entry = spans_entry(received_otlp_proto(body), "serve:otlp")
        rows = [tuple(row) for row in entry.spans]
        with Store(work / f"expect-{i}.duckdb") as store:
            store.load_spans(rows_table(rows, [0] * len(rows)), source="x")
            store.derive_traces(sorted({r[2] for r in rows}), source="x")
            events = store.con.execute("SELECT count(*) FROM events").fetchone()[0]
            runs = store.con.execute("SELECT count(*) FROM runs").fetchone()[0]
        out.append((int(events), int(runs)))
    return out


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
    it less than wall time: decoding (protobuf to span rows, checked), the
    spool's encoding, the load into ``spans`` (one transaction), and the
    derivation of every trace from the stored spans (records, derive, classify).
    """
    import msgspec

    from tracekit.intake.otlp.received import rows_table
    from tracekit.server.decode import received_otlp_proto, spans_entry
    from tracekit.store import Store

    clock = time.process_time
    costs: dict[str, float] = {}
    t = clock()
    entries = [spans_entry(received_otlp_proto(b), "serve:otlp") for b in batches]
    costs["decode"] = clock() - t
    spans = sum(len(e.spans) for e in entries)
    t = clock()
    encoder = msgspec.msgpack.Encoder()
    for e in entries:
        encoder.encode(e)
    costs["spool encode"] = clock() - t
    rows = [tuple(row) for e in entries for row in e.spans]
    with Store(work / "stages.duckdb") as store:
        store.load_spans(rows_table(rows[:10], [0] * 10), source="warm")  # first-use costs
        store.derive_traces(sorted({r[2] for r in rows[:10]}), source="warm")
        t = clock()
        store.load_spans(rows_table(rows, list(range(len(rows)))), source="serve:otlp")
        costs["load into spans"] = clock() - t
        t = clock()
        store.derive_traces(sorted({r[2] for r in rows}), source="serve:derive")
        costs["derive (records, tables, classify)"] = clock() - t
    in_hand = _in_hand_cost(rows, work)
    if in_hand is not None:
        costs["derive in hand (records, tables, classify)"] = in_hand
    return {k: 1e6 * v / spans for k, v in costs.items()}


def _in_hand_cost(rows: list[tuple], work: Path) -> float | None:
    """CPU seconds of the loader's road in hand for these rows (a server without it: None)."""
    try:
        from tracekit.server.in_hand import Hand
    except ImportError:
        return None
    from tracekit.intake.otlp.received import rows_table
    from tracekit.store import Store

    lines = list(range(len(rows)))
    with Store(work / "stages-hand.duckdb") as store:
        warm = Hand(settle=0.0)
        taken = store.load_spans(rows_table(rows[:10], [0] * 10), source="warm")
        warm.route(store, list(zip(rows[:10], [0] * 10, strict=True)), taken, 0.0)
        warm.feed()
        warm.step(store, 1.0, final=True, most=1 << 30, source="warm", span_source="warm")
        taken = store.load_spans(rows_table(rows, lines), source="serve:otlp")
        hand = Hand(settle=0.0)
        t = time.process_time()
        hand.route(store, list(zip(rows, lines, strict=True)), taken, 0.0)
        hand.feed()
        hand.step(
            store, 1.0, final=True, most=1 << 30, source="serve:derive", span_source="serve:otlp"
        )
        return time.process_time() - t


def report(name: str, r: dict, expect: list[tuple[int, int]] | None = None) -> dict:
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
    if expect is not None and "counted" in r:
        events = sum(n * e for n, (e, _) in zip(r["per_template"], expect, strict=True))
        runs = sum(n * k for n, (_, k) in zip(r["per_template"], expect, strict=True))
        got = r["counted"]
        row["counted"] = {**got, "expected_events": events, "expected_runs": runs}
        verdict = (
            "every acknowledged span stored"
            if (got["events"], got["runs"]) == (events, runs)
            else "MISSING OR EXTRA"
        )
        if got.get("underived") and verdict != "every acknowledged span stored":
            verdict = (
                f"{got['underived']:,} traces stored, not derived yet (the stop's deadline):"
                " the next start derives them"
                if got.get("spans") == r["acked"]
                else verdict
            )
        spans = f"{got['spans']:,} spans of {r['acked']:,} acked, " if "spans" in got else ""
        print(
            f"{'':9} in the store: {spans}{got['events']:,} events of {events:,} expected,"
            f" {got['runs']:,} runs of {runs:,}, {got['duplicates']} duplicates: {verdict}"
        )
    if r.get("lags") is not None:
        during = [(lag, n) for t, lag, n in r["lags"] if t <= r["end"]]
        said = sorted(lag for lag, _ in during if lag is not None)
        row["lag_max_s"] = said[-1] if said else None
        row["lag_p99_s"] = said[min(len(said) - 1, int(len(said) * 0.99))] if said else None
        row["pending_max"] = max((n for _, n in during), default=0)
        row["derived_after_s"] = r["derived_end"] - r["end"]
        lag = (
            f"derivation lag during the load max {row['lag_max_s']:.1f} s, p99 {row['lag_p99_s']:.1f} s"
            if said
            else "derivation lag not reported by this server"
        )
        print(
            f"{'':9} {lag}; at most {row['pending_max']:,} spans waiting to be derived;"
            f" all derived {row['derived_after_s']:.1f} s after the load ended"
        )
    curve = r.get("rss_curve") or []
    if curve:
        row["rss_curve"] = [(round(t), round(mb)) for t, mb in curve]
        half = len(curve) // 2
        first = max((mb for _, mb in curve[:half]), default=0)
        second = max((mb for _, mb in curve[half:]), default=0)
        step = max(1, len(curve) // 20)
        points = "  ".join(f"{t:.0f}s:{mb:.0f}" for t, mb in curve[::step])
        print(f"{'':9} RSS MB (server and its workers): {points}")
        print(f"{'':9} RSS max first half {first:.0f} MB, second half {second:.0f} MB")
        each = ", ".join(f"{k} {v:.0f}" for k, v in sorted(r.get("rss_each", {}).items()))
        print(f"{'':9} RSS max by process (MB): {each}")
    if r.get("stages"):
        print(f"{'':9} server CPU by stage (s): {json.dumps(r['stages'])}")
        per = {k: 1e6 * v / max(r["stored"], 1) for k, v in r["stages"].items()}
        row["cpu_us_per_span"] = per
        print(f"{'':9} per span stored (us): " + ", ".join(f"{k} {v:.1f}" for k, v in per.items()))
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
    parser.add_argument(
        "--py-spy",
        type=Path,
        help="sample the tracekit server with py-spy (pip install py-spy) into this file"
        " (collapsed stacks, every thread and process)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="also run the server of this checkout (PYTHONPATH), first, e.g. ../main-baseline",
    )
    parser.add_argument("--rss-every", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="spans a second all clients send together at most (0: as fast as answered);"
        " with --duration 600, the soak: --rate 20000 --duration 600",
    )
    parser.add_argument(
        "--derive-wait",
        type=float,
        default=600.0,
        help="seconds after the load to wait for every trace to be derived",
    )
    parser.add_argument(
        "--no-stages", action="store_true", help="skip the in-process CPU-per-stage figures"
    )
    args = parser.parse_args()
    batches = template_batches(args.runs, seed=7)
    print(
        f"{len(batches)} template batches of up to {BATCH} spans (whole traces), {args.clients} exporters, {args.duration:g} s"
    )
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        if not args.no_stages:
            costs = stage_costs(batches, work)
            print(
                "CPU per span: "
                + ", ".join(f"{k} {v:.1f} us" for k, v in costs.items())
                + f"; total {sum(costs.values()):.1f} us = {1e6 / sum(costs.values()):,.0f} spans/s a core"
            )
        expect = expected_counts(batches, work)
        rows = []
        for code in args.baseline:
            rows.append(
                report(f"base:{code.name}", run_tracekit(batches, args, work, code), expect)
            )
        rows.append(report("tracekit", run_tracekit(batches, args, work), expect))
        if not args.no_phoenix:
            phoenix = run_phoenix(batches, args, work)
            if phoenix is not None:
                rows.append(report("phoenix", phoenix))
                t, p = rows[-2], rows[-1]
                print(
                    f"ratio    acked {t['acked_per_s'] / max(p['acked_per_s'], 1e-9):.1f}x"
                    f"  stored {t['stored_per_s'] / max(p['stored_per_s'], 1e-9):.1f}x"
                )
        if args.baseline:
            t, b = rows[len(args.baseline)], rows[0]
            print(
                f"ratio to {b['server']}: acked {t['acked_per_s'] / max(b['acked_per_s'], 1e-9):.2f}x"
                f"  stored {t['stored_per_s'] / max(b['stored_per_s'], 1e-9):.2f}x"
            )
        print(json.dumps([{k: v for k, v in r.items() if k != "rss_curve"} for r in rows]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
