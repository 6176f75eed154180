"""CPU time of the OTLP intake path (tree and ingest), this tree against a baseline checkout.

Usage:
    .venv/bin/python bench/bench_intake.py --baseline /tmp/base-main [--events 200000] [--repeat 5]

Writes a simulated OTLP fleet (``tracekit simulate --format otlp``, seed 0)
once, then, in child processes alternating this tree's code and the
baseline's (``PYTHONPATH``), so that a loaded machine shifts both sides
alike: ``read_trace`` on it (what ``tracekit tree FILE`` reads) and
``Store.ingest`` of it into a fresh store (what ``tracekit ingest`` does).
Figures are medians of CPU seconds (``time.process_time`` in the child, every
thread: reading, mapping and loading only, no imports); the ratio is this
tree over the baseline. The baseline may be a checkout from before the move
of ``readers/`` to ``intake/``: the child imports whichever it has.
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
except ImportError:  # a checkout from before the move
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare with")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
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
            f"OTLP fleet: {args.events} events asked, {size:.1f} MB, seed 0, {args.repeat} rounds"
        )
        for what in ("tree", "ingest"):
            new: list[float] = []
            old: list[float] = []
            for _ in range(args.repeat):
                seconds, new_count = _child(HERE, path, what, folder)
                new.append(seconds)
                seconds, old_count = _child(args.baseline, path, what, folder)
                old.append(seconds)
            med_new, med_old = statistics.median(new), statistics.median(old)
            print(
                f"{what}: records this tree {new_count}, baseline {old_count};"
                f" CPU s median this tree {med_new:.3f}, baseline {med_old:.3f};"
                f" ratio {med_new / med_old:.2f}"
            )


if __name__ == "__main__":
    main()
