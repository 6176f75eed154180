"""CPU time of the OTLP intake path (tree and ingest), this tree against a baseline checkout.

Usage:
    .venv/bin/python bench/bench_intake.py --baseline /tmp/base-main [--baseline ../main-baseline]
        [--events 200000] [--repeat 5] [--calls]

Writes a simulated OTLP fleet (``tracekit simulate --format otlp``, seed 0)
once, then, in child processes alternating this tree's code and the
baseline's (``PYTHONPATH``), so that a loaded machine shifts both sides
alike: ``read_trace`` on it (what ``tracekit tree FILE`` reads) and
``Store.ingest`` of it into a fresh store (what ``tracekit ingest`` does).
Figures are medians of CPU seconds (``time.process_time`` in the child, every
thread: reading, mapping and loading only, no imports); the ratio is this
tree over the baseline. The baseline may be a checkout from before the move
of ``readers/`` to ``intake/``: the child imports whichever it has. Several
``--baseline`` checkouts are measured in the same rounds, each side by side
with this tree. ``--calls`` also counts each side's Python calls under
cProfile (one ``read_trace``, after a first one that loads the modules).
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
try:
    from tracekit.intake import read_trace
except ImportError:  # a baseline checkout whose readers are in tracekit.readers
    from tracekit.readers import read_trace
from tracekit.store import Store
import tracekit.store.ingest
path, what, db = sys.argv[1:4]
started = time.process_time()
if what == "tree":
    result = read_trace(path)
    count = len(result.events)
else:
    store = Store(db)
    count = store.ingest([path]).totals.accepted
    store.close()
print(time.process_time() - started, count)
"""
CALLS = """
import cProfile, pstats, sys
try:
    from tracekit.intake import read_trace
except ImportError:  # a baseline checkout whose readers are in tracekit.readers
    from tracekit.readers import read_trace
read_trace(sys.argv[1])
profile = cProfile.Profile()
profile.enable()
read_trace(sys.argv[1])
profile.disable()
print(sum(row[1] for row in pstats.Stats(profile).stats.values()))
"""


def _child(checkout: Path, path: Path, what: str, folder: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    db = folder / f"{checkout.name}-{what}.duckdb"
    for stale in folder.glob(db.name + "*"):
        stale.unlink()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), what, str(db)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    seconds, count = done.stdout.split()
    return float(seconds), int(count)


def _calls(checkout: Path, path: Path) -> int:
    """Python calls (cProfile) of one ``read_trace`` of the file with the checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", CALLS, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    return int(done.stdout.split()[-1])


def _measure(sides: list[Path], path: Path, what: str, folder: Path, repeat: int) -> None:
    """Each side in fresh processes, alternating, ``repeat`` rounds; medians and ratios."""
    seconds: dict[Path, list[float]] = {side: [] for side in sides}
    counts: dict[Path, int] = {}
    for _ in range(repeat):
        for side in sides:
            spent, counts[side] = _child(side, path, what, folder)
            seconds[side].append(spent)
    mine = statistics.median(seconds[HERE])
    for side in sides[1:]:
        theirs = statistics.median(seconds[side])
        print(
            f"{what}: records this tree {counts[HERE]}, {side} {counts[side]};"
            f" CPU s median this tree {mine:.3f}, {side} {theirs:.3f}; ratio {mine / theirs:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, action="append", required=True, help="a checkout to compare with"
    )
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--calls", action="store_true", help="count Python calls of a tree read")
    args = parser.parse_args()
    sides = [HERE, *args.baseline]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path = folder / "fleet.otlp.jsonl"
        subprocess.run(
            [str(Path(sys.executable).parent / "tracekit"), "simulate", "--format", "otlp",
             "--events", str(args.events), "--seed", "0", "--start", "2026-01-01T00:00:00Z", "--out", str(path)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        size = path.stat().st_size / 1e6
        print(
            f"OTLP fleet: {args.events} events asked, {size:.1f} MB, seed 0, {args.repeat} rounds,"
            f" load average {os.getloadavg()[0]:.1f}"
        )
        for what in ("tree", "ingest"):
            _measure(sides, path, what, folder, args.repeat)
        if args.calls:
            for side in sides:
                print(f"calls: {side}: {_calls(side, path):,} Python calls in one tree read")


if __name__ == "__main__":
    main()
