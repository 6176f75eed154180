"""Benchmark: `tracekit tree` against the least a tree command must do, on v1 and on OTLP.

Two floors, each a fresh Python process over the same file: parse-only reads
every line and parses it with orjson; parse-and-index also builds the parent
index (each run's parent for v1, each span's parent and its children for
OTLP), the least a tree needs before it can draw anything. Every command runs
as a child process, a few times each, alternating; the script reports medians,
the ratios, and each child's peak RSS (from ``os.wait4``).

``--format v1`` (the default) writes a 1,000,000-event single-run trace and
runs ``tracekit tree FILE --no-fold`` (every one of its 750,000 lines);
``--format otlp`` writes a simulated OTLP fleet (``tracekit simulate --format
otlp``, seed 0) and runs ``tracekit tree FILE`` as a user would (folded).

Run: ``.venv/bin/python bench/bench_tree.py`` (``--format otlp``, ``--events N``, ``--repeat K``).
Aims: v1 within 2x of parse-only, peak memory under 1.5 GB; OTLP within 1x of
parse-and-index.
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
#: parse-only plus the parent index: v1 runs by id, OTLP spans by (trace, span) and their children.
INDEX_V1 = (
    "import sys, orjson\n"
    "loads = orjson.loads\n"
    "parents = {}\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        record = loads(line)\n"
    "        if record.get('type') == 'enter':\n"
    "            parents[record['runId']] = record.get('parentRunId')\n"
    "children = {}\n"
    "for run, parent in parents.items():\n"
    "    children.setdefault(parent, []).append(run)\n"
)
INDEX_OTLP = (
    "import sys, orjson\n"
    "loads = orjson.loads\n"
    "parents = {}\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        for resource in loads(line)['resourceSpans']:\n"
    "            for scope in resource['scopeSpans']:\n"
    "                for span in scope['spans']:\n"
    "                    parents[(span['traceId'], span['spanId'])] = span.get('parentSpanId', '')\n"
    "children = {}\n"
    "for (trace, span), parent in parents.items():\n"
    "    if parent:\n"
    "        children.setdefault((trace, parent), []).append(span)\n"
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


def timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one child; output to /dev/null."""
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {stderr}")
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, cpu, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


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


def make_otlp(path: Path, events: int) -> int:
    """A simulated OTLP fleet of about ``events`` records (seed 0); the records it stands for."""
    subprocess.run(
        [str(BIN / "tracekit"), "simulate", "--format", "otlp", "--events", str(events),
         "--seed", "0", "--start", "2026-01-01T00:00:00Z", "--out", str(path)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return events


def _commands(trace: Path, otlp: bool) -> dict[str, list[str]]:
    python = str(BIN / "python")
    tree = [str(BIN / "tracekit"), "tree", str(trace), "--color", "never"]
    return {
        "parse-only (orjson loop)": [python, "-c", PARSE_ONLY, str(trace)],
        "parse-and-index": [python, "-c", INDEX_OTLP if otlp else INDEX_V1, str(trace)],
        # v1 --no-fold: every one of the 750,000 lines, unfolded
        # (folded, this run prints a few lines: bench/bench_fold.py measures that).
        "tracekit tree": tree if otlp else [*tree, "--no-fold"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("v1", "otlp"), default="v1")
    parser.add_argument("--events", type=int, default=None, help="default 1,000,000 (otlp 200,000)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    otlp = args.format == "otlp"
    events = args.events or (200_000 if otlp else 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / ("bench.otlp.jsonl" if otlp else "bench.jsonl")
        count = make_otlp(trace, events) if otlp else make_trace(trace, events)
        size = trace.stat().st_size / 1e6
        print(f"trace ({args.format}): {count:,} events, {size:.0f} MB")
        commands = _commands(trace, otlp)
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                results[name].append(timed(argv))
        phases = subprocess.run(
            [str(BIN / "python"), "-c", BREAKDOWN, str(trace)],
            capture_output=True,
            text=True,
            check=True,
        )
    _report(results, phases.stdout.strip())


def _report(results: dict[str, list[tuple[float, float, float]]], phases: str) -> None:
    """Medians of wall and CPU seconds; the ratios in CPU seconds (a loaded machine shifts wall)."""
    cpu = {}
    for name, runs in results.items():
        wall = statistics.median(t for t, _, _ in runs)
        cpu[name] = statistics.median(c for _, c, _ in runs)
        peak = max(m for _, _, m in runs)
        times = ", ".join(f"{c:.2f}" for _, c, _ in runs)
        print(
            f"{name:26} median {wall:.2f} s wall, {cpu[name]:.2f} s CPU  (CPU runs: {times})"
            f"  peak RSS {peak:.0f} MB"
        )
    tree = cpu["tracekit tree"]
    print(f"ratio tree / parse-only (CPU): {tree / cpu['parse-only (orjson loop)']:.2f}x")
    print(f"ratio tree / parse-and-index (CPU): {tree / cpu['parse-and-index']:.2f}x")
    print(f"where the tree's time goes (one run, in process): {phases}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
