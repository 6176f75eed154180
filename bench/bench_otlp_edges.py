"""CPU time of the OTLP reader with the edge rules, against a checkout without them.

Usage:
    .venv/bin/python bench/bench_otlp_edges.py --baseline ../main-baseline [--events 200000] [--repeat 5]

Writes a simulated OTLP fleet (``tracekit simulate --format otlp``, seed 0)
once, then maps it with :class:`tracekit.intake.otlp.convert.OtlpConverter`
(``feed_json`` line by line, ``take_complete`` as ``tracekit tree`` and
``ingest`` do, then ``finish_lines``) in child processes, alternating this
tree's code and the baseline checkout's (``PYTHONPATH``), so that a loaded
machine shifts both sides alike. Figures are medians of CPU seconds
(``time.process_time`` in the child: reading and mapping only, no imports);
the ratio is this tree over the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CHILD = """
import sys, time
from tracekit.intake.otlp.convert import OtlpConverter
path = sys.argv[1]
started = time.process_time()
converter = OtlpConverter()
records = 0
with open(path, "rb") as stream:
    for number, line in enumerate(stream, 1):
        converter.feed_json(line, line=number)
        records += len(converter.take_complete(idle=64))
records += len(converter.finish_lines())
print(time.process_time() - started, records)
"""


def _child(checkout: Path, path: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    seconds, records = done.stdout.split()
    return float(seconds), int(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout without the rules")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fleet.otlp.jsonl"
        subprocess.run(
            [str(Path(sys.executable).parent / "tracekit"), "simulate", "--format", "otlp",
             "--events", str(args.events), "--seed", "0", "--start", "2026-01-01T00:00:00Z", "--out", str(path)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        new: list[float] = []
        old: list[float] = []
        for _ in range(args.repeat):
            seconds, new_records = _child(HERE, path)
            new.append(seconds)
            seconds, old_records = _child(args.baseline, path)
            old.append(seconds)
        size = path.stat().st_size / 1e6
    print(f"OTLP fleet: {args.events} events asked, {size:.1f} MB, seed 0, {args.repeat} rounds")
    print(f"records: this tree {new_records}, baseline {old_records}")
    med_new, med_old = statistics.median(new), statistics.median(old)
    print(f"CPU s, median: this tree {med_new:.3f}, baseline {med_old:.3f}")
    print(f"ratio (this tree / baseline): {med_new / med_old:.2f}")


if __name__ == "__main__":
    main()
