"""Benchmark: a POST /v1/traces while 50 slow SQL reads hit the same `tracekit serve`.

The baseline is the same server idle, in the same run. Each POST carries one span
(a fresh trace id each time), timed from the first byte sent to the reply; the
reads are `SELECT count(*) FROM range(1e10) ...` with a 4 s timeout, sent from 50
threads at once, the POSTs starting 0.1 s after them (the worst moment: the reads
arrive together). Loopback only; bounded in count and time.

    python bench/bench_serve_reads.py --posts 20 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

TRACEKIT = str(Path(sys.executable).parent / "tracekit")
SLOW = {"query": "SELECT count(*) FROM range(10000000000) t(a) WHERE a % 7 = 3", "timeout": 4}


def _span(n: int) -> bytes:
    span = {
        "traceId": f"{n + 1:032x}",
        "spanId": f"{n + 1:016x}",
        "name": "invoke_agent front",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": "gen_ai.agent.name", "value": {"stringValue": "front"}}],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def _start(db: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [TRACEKIT, "serve", "--db", str(db), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"listening on (\S+)", line)
        if found:
            return proc, found.group(1)
    raise RuntimeError("tracekit serve did not start")


def _send(url: str, body: bytes, kind: str) -> int:
    request = urllib.request.Request(url, body, {"Content-Type": kind})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            reply.read()
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _posts(url: str, count: int, first: int) -> list[float]:
    took = []
    for n in range(first, first + count):
        began = time.monotonic()
        status = _send(url + "/v1/traces", _span(n), "application/json")
        took.append(time.monotonic() - began)
        assert status == 200, status
    return took


def _under_reads(url: str, count: int, first: int) -> tuple[list[float], list[int]]:
    answers: list[int] = []
    body = json.dumps(SLOW).encode()

    def read() -> None:
        answers.append(_send(url + "/api/sql", body, "application/json"))

    threads = [threading.Thread(target=read) for _ in range(50)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    took = _posts(url, count, first)
    for t in threads:
        t.join()
    return took, answers


def _line(name: str, took: list[float]) -> str:
    ordered = sorted(took)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"  {name:<28} median {statistics.median(took) * 1000:7.1f} ms"
        f"  p99 {p99 * 1000:7.1f} ms  max {max(took) * 1000:7.1f} ms  ({len(took)} POSTs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _start(Path(tmp) / "s.duckdb")
        try:
            idle, busy, codes = [], [], []
            for r in range(args.rounds):
                idle += _posts(url, args.posts, 2 * r * args.posts)
                took, answers = _under_reads(url, args.posts, (2 * r + 1) * args.posts)
                busy += took
                codes += answers
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(_line("idle", idle))
    print(_line("50 slow /api/sql at once", busy))
    # 400 is "query stopped after 4 s": a read that ran its whole time; 429 a read refused
    # because the read slots were full (Retry-After)
    print(
        f"  the reads' answers (status, count): {sorted({c: codes.count(c) for c in codes}.items())}"
    )


if __name__ == "__main__":
    main()
