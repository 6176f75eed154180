"""Benchmark: `tracekit simulate` (v1 and OTLP) against a bare encode-and-write loop.

The baseline is the floor of any generator of the same output: the records of
one simulated run, already built, encoded with msgspec and written over and
over until as many records are out. Then, on a smaller fleet, reading its
OTLP form back (`read_trace`, which maps spans to records) against reading its
v1 form. Every measurement is a child process (wall time and peak RSS from
``os.wait4``); medians over ``--repeat`` runs, alternating.

Run: ``.venv/bin/python bench/bench_simulate.py`` (``--events N``,
``--read-events N``, ``--repeat K``). Aim: a 5,000,000-event fleet
in well under a minute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
ENCODE_ONLY = """
import sys, msgspec
from tracekit.intake import read_trace
from tracekit.simulation.simulator import simulate
simulate(sys.argv[2] + ".one", runs=1, seed=1)
batch = read_trace(sys.argv[2] + ".one").events
encoder, target, done = msgspec.json.Encoder(), int(sys.argv[1]), 0
with open(sys.argv[2], "wb") as out:
    while done < target:
        chunk = batch * 3000
        out.write(encoder.encode_lines(chunk))
        done += len(chunk)
"""
READ = "import sys\nfrom tracekit.intake import read_trace\nread_trace(sys.argv[1])\n"


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {stderr}")
    return elapsed, usage.ru_maxrss / 1024


def measure(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            results[name].append(timed(argv))
    medians = {}
    for name, runs in results.items():
        medians[name] = statistics.median(t for t, _ in runs)
        peak = max(m for _, m in runs)
        times = ", ".join(f"{t:.2f}" for t, _ in runs)
        print(f"  {name:34} median {medians[name]:6.2f} s  (runs: {times})  peak RSS {peak:.0f} MB")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--read-events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    tk, py = str(BIN / "tracekit"), str(BIN / "python")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        n = str(args.events)
        print(f"writing {args.events:,} events:")
        medians = measure(
            {
                "encode-and-write floor": [py, "-c", ENCODE_ONLY, n, str(base / "floor.jsonl")],
                "tracekit simulate (v1)": [
                    tk,
                    "simulate",
                    "--events",
                    n,
                    "-o",
                    str(base / "f.jsonl"),
                ],
                "tracekit simulate --format otlp": [
                    *(tk, "simulate", "--events", n, "--format", "otlp"),
                    *("-o", str(base / "f.otlp.jsonl")),
                ],
            },
            args.repeat,
        )
        floor, v1 = medians["encode-and-write floor"], medians["tracekit simulate (v1)"]
        print(f"  simulate (v1): {args.events / v1:,.0f} events/s, {v1 / floor:.2f}x the floor")
        otlp = medians["tracekit simulate --format otlp"]
        print(f"  simulate (otlp): {args.events / otlp:,.0f} events/s, {otlp / v1:.2f}x v1")
        for name in ("f.jsonl", "f.otlp.jsonl"):
            print(f"  {name}: {(base / name).stat().st_size / 1e6:,.0f} MB")
            (base / name).unlink()
        small = str(args.read_events)
        v1_path, otlp_path = base / "r.jsonl", base / "r.otlp.jsonl"
        subprocess.run(
            [tk, "simulate", "--events", small, "-o", str(v1_path)], check=True, capture_output=True
        )
        subprocess.run(
            [tk, "simulate", "--events", small, "--format", "otlp", "-o", str(otlp_path)],
            check=True,
            capture_output=True,
        )
        print(f"reading a {args.read_events:,}-event fleet back (read_trace):")
        read = measure(
            {
                "v1 JSONL": [py, "-c", READ, str(v1_path)],
                "OTLP JSON": [py, "-c", READ, str(otlp_path)],
            },
            args.repeat,
        )
        ratio = read["OTLP JSON"] / read["v1 JSONL"]
        rate = args.read_events / read["OTLP JSON"]
        print(f"  OTLP: {rate:,.0f} events/s, {ratio:.2f}x the v1 read")


if __name__ == "__main__":
    main()
