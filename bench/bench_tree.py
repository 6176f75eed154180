"""Benchmark: `tracekit tree` on a 1,000,000-event single-run trace vs a bare parse.

The baseline is the least any tree command must do: read every line and parse
it with orjson, in a fresh Python process, over the same file. Both run as
child processes, a few times each, alternating; the script reports medians,
the ratio, and each child's peak RSS (from ``os.wait4``).

Run: ``.venv/bin/python bench/bench_tree.py`` (``--events N``, ``--repeat K``).
Aim: the tree within 2x of parse-only, peak memory under 1.5 GB.
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
PARSE_ONLY = (
    "import sys, orjson\n"
    "loads = orjson.loads\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        loads(line)\n"
)
T0 = 1_767_225_600_000


def make_trace(path: Path, events: int) -> int:
    """One root run of blocks of 8 records: a step, a delegation, a nested one."""
    run = "run-bench"
    written = 0
    out = path.open("w")
    # Written block by block: the benchmark process stays small, so the peak
    # RSS of its children (inherited at fork) is theirs alone.
    out.write(f'{{"type":"run.start","ts":{T0},"runId":"{run}","agent":"orchestrator"}}\n')
    ts = T0
    for b in range((events - 2) // 8):
        child, grand = f"{run}/c{b}", f"{run}/c{b}/g"
        ts += 10
        lines = [
            f'{{"type":"node","ts":{ts},"runId":"{run}","id":"decide"}}',
            f'{{"type":"enter","ts":{ts + 1},"invocationId":"i{b}","runId":"{child}",'
            f'"parentRunId":"{run}","agent":"sql","node":"delegate"}}',
            f'{{"type":"node","ts":{ts + 2},"runId":"{child}","id":"delegate/sql/write_query"}}',
            f'{{"type":"enter","ts":{ts + 3},"invocationId":"j{b}","runId":"{grand}",'
            f'"parentRunId":"{child}","agent":"checker","node":"delegate/sql/check"}}',
            f'{{"type":"node","ts":{ts + 4},"runId":"{grand}","id":"delegate/sql/check/checker/lint"}}',
            f'{{"type":"exit","ts":{ts + 5},"invocationId":"j{b}","runId":"{grand}",'
            f'"parentRunId":"{child}","agent":"checker","ok":true,"durationMs":2,"status":"ok"}}',
            f'{{"type":"node","ts":{ts + 6},"runId":"{child}","id":"delegate/sql/say"}}',
            f'{{"type":"exit","ts":{ts + 7},"invocationId":"i{b}","runId":"{child}",'
            f'"parentRunId":"{run}","agent":"sql","ok":true,"durationMs":6,"status":"ok"}}',
        ]
        out.write("\n".join(lines) + "\n")
        written += len(lines)
    out.write(
        f'{{"type":"run.end","ts":{ts + 10},"runId":"{run}","ok":true,"durationMs":{ts + 10 - T0}}}\n'
    )
    out.close()
    return written + 2


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process; output to /dev/null."""
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {stderr}")
    return elapsed, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


BREAKDOWN = (
    "import sys, time\n"
    "t0 = time.perf_counter()\n"
    "from tracekit._util.gcpause import gc_paused\n"
    "from tracekit.cli.tree import render_forest\n"
    "from tracekit.intake import read_trace\n"
    "from tracekit.tree import build_forest\n"
    "t1 = time.perf_counter()\n"
    "with gc_paused():\n"
    "    result = read_trace(sys.argv[1]); t2 = time.perf_counter()\n"
    "    forest = build_forest(result.events); t3 = time.perf_counter()\n"
    "    text = render_forest(forest, fold=False).stdout; t4 = time.perf_counter()\n"
    "    del result, forest; t5 = time.perf_counter()\n"
    "print(f'import {t1-t0:.2f} s, read {t2-t1:.2f} s, build {t3-t2:.2f} s, '\n"
    "      f'render {t4-t3:.2f} s, free {t5-t4:.2f} s')\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "bench.jsonl"
        count = make_trace(trace, args.events)
        size = trace.stat().st_size / 1e6
        print(f"trace: {count:,} events, {size:.0f} MB")
        commands = {
            "parse-only (orjson loop)": [str(BIN / "python"), "-c", PARSE_ONLY, str(trace)],
            # --no-fold: every one of the 750,000 lines, as before folding existed
            # (folded, this run prints a few lines: bench/bench_fold.py measures that).
            "tracekit tree": [
                str(BIN / "tracekit"),
                "tree",
                str(trace),
                "--color",
                "never",
                "--no-fold",
            ],
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                results[name].append(timed(argv))
        phases = subprocess.run(
            [str(BIN / "python"), "-c", BREAKDOWN, str(trace)],
            capture_output=True,
            text=True,
            check=True,
        )
    medians = {}
    for name, runs in results.items():
        medians[name] = statistics.median(t for t, _ in runs)
        peak = max(m for _, m in runs)
        times = ", ".join(f"{t:.2f}" for t, _ in runs)
        print(f"{name:26} median {medians[name]:.2f} s  (runs: {times})  peak RSS {peak:.0f} MB")
    ratio = medians["tracekit tree"] / medians["parse-only (orjson loop)"]
    print(f"ratio tree / parse-only: {ratio:.2f}x (aim: within 2x)")
    print(f"where the tree's time goes (one run, in process): {phases.stdout.strip()}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
