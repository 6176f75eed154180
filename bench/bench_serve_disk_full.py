"""How soon tracekit serve takes writes again once a full disk has room, under load.

The store lives on a small tmpfs (mounted here: run as root). Exporter
threads send OTLP/JSON batches all along; the disk is filled until the server
refuses writes (``/healthz`` 503), then the filler goes and the tmpfs grows.
Reported: the seconds from the room coming back to ``/healthz`` 200 and to
the first 200 of an exporter, over ``--rounds`` rounds, and that every
acknowledged span is stored at the end. docs/serve.md promises a few seconds.

Run (root): ``.venv/bin/python bench/bench_serve_disk_full.py --rounds 3``
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import duckdb

BATCH = 200


def batch(i: int) -> bytes:
    spans = [
        {
            "traceId": f"{n + 1:032x}",
            "spanId": f"{n + 1:016x}",
            "name": "invoke_agent filler",
            "startTimeUnixNano": str(1700000000000000000 + n * 1000),
            "endTimeUnixNano": str(1700000001000000000 + n * 1000),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": f"agent-{n % 50}"}},
            ],
        }
        for n in range(i * BATCH, (i + 1) * BATCH)
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def status(url: str, data: bytes | None = None) -> int:
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data, headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def fill(disk: Path) -> None:
    piece = b"\0" * (1 << 20)
    with open(disk / "filler", "ab", buffering=0) as out:
        while True:
            try:
                out.write(piece)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    return
                raise


def wait_for(url: str, want: int, seconds: float) -> float:
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if status(url) == want:
            return time.monotonic() - began
        time.sleep(0.1)
    raise SystemExit(f"{url} not {want} within {seconds} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tk-full-"))
    disk = work / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], check=True)
    tracekit = str(Path(sys.executable).parent / "tracekit")
    db = disk / "full.duckdb"
    proc = subprocess.Popen(
        [tracekit, "serve", "--db", str(db), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    acked: list[int] = []
    stop = threading.Event()
    try:
        sidecar = db.with_name(db.name + ".server.json")
        while not sidecar.exists():
            time.sleep(0.05)
        url = json.loads(sidecar.read_text())["url"]
        counter = iter(range(10**6))

        def send() -> None:
            while not stop.is_set():
                i = next(counter)
                if status(url + "/v1/traces", batch(i)) == 200:
                    acked.append(i)
                time.sleep(0.05)

        senders = [threading.Thread(target=send) for _ in range(2)]
        for thread in senders:
            thread.start()
        for round_ in range(args.rounds):
            time.sleep(2)
            fill(disk)
            wait_for(url + "/healthz", 503, 60)
            (disk / "filler").unlink()
            size = 64 * (round_ + 2)
            subprocess.run(["mount", "-o", f"remount,size={size}m", str(disk)], check=True)
            back = time.monotonic()
            healthy = wait_for(url + "/healthz", 200, 120)
            before = len(acked)
            while len(acked) == before and time.monotonic() - back < 120:
                time.sleep(0.05)
            first = time.monotonic() - back
            print(
                f"round {round_ + 1}: /healthz 200 after {healthy:.1f} s, an exporter's 200 after {first:.1f} s"
            )
        stop.set()
        for thread in senders:
            thread.join()
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=300)[1]
        con = duckdb.connect(str(db), read_only=True)
        stored = int(con.execute("SELECT count(*) FROM runs").fetchone()[0])  # type: ignore[index]
        con.close()
        for line in err.strip().splitlines():
            if "store" in line and "listening" not in line:
                print("  " + line[:200])
        print(f"{len(acked) * BATCH} spans acknowledged, {stored} stored")
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["umount", "-l", str(disk)], check=False)
        os.rmdir(disk)


if __name__ == "__main__":
    main()
