"""Benchmark: the pages against an older checkout's, side by side in one run.

For each side (this checkout, and ``--baseline``, an older checkout run through
the same interpreter with ``PYTHONPATH`` set to it), on the same simulated store:

* ``tracekit dashboard --db STORE`` as a fresh process: wall and CPU seconds
  (user + system of the process, ``os.wait4``), medians of ``--repeat`` runs,
  the two sides alternating;
* ``tracekit serve`` on a copy of the store: ``GET /api/dashboard`` and
  ``GET /api/live`` the first time (cold) and then again (warm, the median),
  and the live page's first paint in headless Chromium (``/`` opened until its
  cards show), on a fresh server and again on the warm one.

Run (the baseline a worktree of main)::

    git worktree add --detach /tmp/tk-main main
    .venv/bin/python bench/bench_pages.py --baseline /tmp/tk-main --runs 30000

Aims: the dashboard on 30,000 runs within 3 CPU-s, ``/api/dashboard`` within
0.5 s warm, the live page's first paint within 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OUT = Path(__file__).parent / "out"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def build_store(runs: int) -> Path:
    """Simulate and ingest the fleet once (seed 3); later runs reuse the store."""
    from tracekit.simulation.simulator import simulate
    from tracekit.store import Store

    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / f"pages-{runs}.duckdb"
    if not db.exists():
        trace = OUT / f"pages-{runs}.jsonl"
        simulate(trace, runs=runs, seed=3)
        with Store(db) as store:
            store.ingest(trace)
        trace.unlink()
    return db


def run(argv: list[str], code: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one command with ``code`` first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(code), "NO_COLOR": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/tmp"
    )
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"failed: {' '.join(argv)} (PYTHONPATH={code})")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def serve(db: Path, code: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``tracekit serve`` on ``db`` with ``code`` first on the import path; its URL."""
    sidecar = db.with_name(db.name + ".server.json")
    sidecar.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen([str(BIN / "tracekit"), "serve", "--db", str(db), "--port", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/tmp")  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if sidecar.exists() and json.loads(sidecar.read_text())["pid"] == proc.pid:
            return proc, json.loads(sidecar.read_text())["url"]
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started


def first_paint(url: str) -> float:
    """Seconds from asking for the live page until its cards show (the browser already open)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        try:
            view = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            view.goto(url + "/", wait_until="commit")
            view.wait_for_selector(".card .n", timeout=600_000)
            return time.perf_counter() - started
        finally:
            browser.close()


def served_side(db: Path, code: Path, repeat: int) -> dict[str, float]:
    """The server's pages on a copy of the store: cold, then warm (medians)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store.duckdb"
        shutil.copy(db, copy)
        proc, url = serve(copy, code)
        try:
            found = {"first paint, cold": first_paint(url)}
            found["/api/dashboard cold"] = get(url + "/api/dashboard")
            found["/api/dashboard warm"] = statistics.median(
                get(url + "/api/dashboard") for _ in range(repeat)
            )
            found["/api/live cold (service filter)"] = get(
                url + "/api/live?since=&service=support-desk"
            )
            found["/api/live warm"] = statistics.median(
                get(url + "/api/live") for _ in range(repeat)
            )
            found["first paint, warm"] = statistics.median(first_paint(url) for _ in range(repeat))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="an older checkout")
    parser.add_argument("--runs", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--served-only", action="store_true", help="skip `tracekit dashboard`")
    args = parser.parse_args()
    db = build_store(args.runs)
    sides = {"baseline": args.baseline.resolve(), "this": HERE}
    print(f"store: {db} ({args.runs:,} runs)")
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(0 if args.served_only else args.repeat):
            for side, code in sides.items():
                argv = [
                    str(BIN / "tracekit"),
                    "dashboard",
                    "--db",
                    str(db),
                    "--out",
                    f"{tmp}/{side}.html",
                ]
                times[side].append(run(argv, code))
    for side, got in times.items():
        if not got:
            continue
        wall, cpu = statistics.median(w for w, _ in got), statistics.median(c for _, c in got)
        print(f"tracekit dashboard  {side:8}  {wall:6.2f} s wall  {cpu:6.2f} CPU-s")
    for side, code in sides.items():
        for name, seconds in served_side(db, code, args.repeat).items():
            print(f"{name:32} {side:8}  {seconds:6.2f} s")


if __name__ == "__main__":
    main()
