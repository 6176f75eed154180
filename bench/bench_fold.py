"""Benchmark: `tracekit tree` (folded) on a 1,000,000-invocation run vs a bare orjson parse.

The run (written by :func:`make_run`): a root ``orchestrator`` fans out to
1,000 ``batch`` invocations, each of which runs a ``plan`` step and calls
``sql`` 999 times (one call in 200 fails): 1,000,000 invocations, 2,002,002
records. Folded, its tree is a handful of lines. The baseline is the least
any tree command must do: read every line and parse it with orjson, in a
fresh Python process, over the same file. Both run as child processes, a
few times each, alternating; the script reports medians, the ratio, and
each child's peak RSS (``os.wait4``). A last child times the phases in
process, and the lazy HTML (notebook, dashboard) of the same tree.

Run: ``.venv/bin/python bench/bench_fold.py`` (``--batches N --calls K --repeat R``).
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
PHASES = (
    "import sys, time\n"
    "t0 = time.process_time()\n"
    "from tracekit._util.gcpause import gc_paused\n"
    "from tracekit.intake import read_trace\n"
    "from tracekit.tree import build_forest\n"
    "from tracekit.tree.text import describe_agent_tree\n"
    "from tracekit.tree.html import tree_to_html\n"
    "t1 = time.process_time()\n"
    "with gc_paused():\n"
    "    result = read_trace(sys.argv[1]); t2 = time.process_time()\n"
    "    forest = build_forest(result.events); t3 = time.process_time()\n"
    "    text = describe_agent_tree(forest.runs[0].steps); t4 = time.process_time()\n"
    "    page = tree_to_html(forest.runs[0].steps, lazy=True); t5 = time.process_time()\n"
    "print(f'import {t1-t0:.2f} s, read {t2-t1:.2f} s, build {t3-t2:.2f} s, '\n"
    "      f'folded text {t4-t3:.2f} s ({text.count(chr(10)) + 1} lines), '\n"
    "      f'lazy HTML {t5-t4:.2f} s ({len(page) / 1e3:.0f} kB)')\n"
)
T0 = 1_767_225_600_000


def make_run(path: Path, batches: int, calls: int) -> int:
    """Write the run; returns its number of invocations. Written batch by batch (small RSS)."""
    run = "run-huge"
    with path.open("w") as out:
        out.write(f'{{"type":"run.start","ts":{T0},"runId":"{run}","agent":"orchestrator"}}\n')
        ts = T0
        for b in range(batches):
            batch = f"b{b}"
            ts += 1
            start = ts
            lines = [
                f'{{"type":"enter","ts":{ts},"invocationId":"ib{b}","runId":"{batch}",'
                f'"parentRunId":"{run}","agent":"batch","node":"fan_out"}}',
                f'{{"type":"node","ts":{ts},"runId":"{batch}","id":"fan_out/batch/plan"}}',
            ]
            for c in range(calls):
                ts += 1
                child = f"{batch}/s{c}"
                ok = (b * calls + c) % 200 != 199
                end = (
                    '"ok":true,"status":"ok"'
                    if ok
                    else '"ok":false,"status":"error","error":{"code":"SQL_TIMEOUT"}'
                )
                lines.append(
                    f'{{"type":"enter","ts":{ts},"invocationId":"i{b}.{c}","runId":"{child}",'
                    f'"parentRunId":"{batch}","agent":"sql","node":"fan_out/batch/query"}}'
                )
                lines.append(
                    f'{{"type":"exit","ts":{ts + 0.5},"invocationId":"i{b}.{c}","runId":"{child}",'
                    f'"parentRunId":"{batch}","agent":"sql","durationMs":0.5,{end}}}'
                )
            ts += 1
            lines.append(
                f'{{"type":"exit","ts":{ts},"invocationId":"ib{b}","runId":"{batch}",'
                f'"parentRunId":"{run}","agent":"batch","ok":true,"status":"ok",'
                f'"durationMs":{ts - start}}}'
            )
            out.write("\n".join(lines) + "\n")
        out.write(
            f'{{"type":"run.end","ts":{ts + 1},"runId":"{run}","ok":true,"durationMs":{ts + 1 - T0}}}\n'
        )
    return batches * (calls + 1)


def timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process; output to /dev/null."""
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {stderr}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=999)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "huge.jsonl"
        count = make_run(trace, args.batches, args.calls)
        size = trace.stat().st_size / 1e6
        print(f"run: {count:,} invocations, {size:.0f} MB")
        commands = {
            "parse-only (orjson loop)": [str(BIN / "python"), "-c", PARSE_ONLY, str(trace)],
            "tracekit tree (folded)": [
                str(BIN / "tracekit"),
                "tree",
                str(trace),
                "--color",
                "never",
            ],
        }
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                results[name].append(timed(argv))
        shown = subprocess.run(
            commands["tracekit tree (folded)"], capture_output=True, text=True, check=True
        ).stdout
        phases = subprocess.run(
            [str(BIN / "python"), "-c", PHASES, str(trace)],
            capture_output=True,
            text=True,
            check=True,
        )
    medians, cpus = {}, {}
    for name, runs in results.items():
        medians[name] = statistics.median(t for t, _, _ in runs)
        cpu = cpus[name] = statistics.median(c for _, c, _ in runs)
        peak = max(m for _, _, m in runs)
        times = ", ".join(f"{t:.2f}" for t, _, _ in runs)
        print(
            f"{name:26} median {medians[name]:.2f} s  (runs: {times}; CPU median {cpu:.2f} s)"
            f"  peak RSS {peak:.0f} MB"
        )
    ratio = medians["tracekit tree (folded)"] / medians["parse-only (orjson loop)"]
    cpu_ratio = cpus["tracekit tree (folded)"] / cpus["parse-only (orjson loop)"]
    print(f"ratio tree / parse-only: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU (aim: within 2x)")
    print(f"where the CPU time goes (one run, in process): {phases.stdout.strip()}")
    print("the folded tree:\n" + "\n".join("  " + line for line in shown.splitlines()))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
