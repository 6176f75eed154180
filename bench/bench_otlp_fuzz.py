"""The OTLP fuzz of tests/test_otlp_fuzz.py, run longer: many more bodies, JSON and protobuf.

The suite runs it bounded (120 examples a kind); this runs ``--examples`` a
kind (default 5,000) and ``--seconds`` at most, and prints how many bodies
were tried and that every one was refused whole or had every span accounted
for (a failure prints hypothesis's smallest failing body).

Run: ``.venv/bin/python bench/bench_otlp_fuzz.py --examples 5000``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000, help="bodies a kind (JSON, protobuf)")
    parser.add_argument("--seconds", type=float, default=1800, help="stop after this long")
    args = parser.parse_args()
    began = time.monotonic()
    env = {**os.environ, "TRACEKIT_FUZZ_EXAMPLES": str(args.examples)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         str(ROOT / "tests" / "test_otlp_fuzz.py")],
        cwd=ROOT,
        env=env,
        timeout=args.seconds,
        check=False,
    )  # fmt: skip
    took = time.monotonic() - began
    verdict = "every body refused whole or accounted for" if done.returncode == 0 else "FAILED"
    print(f"{2 * args.examples} bodies (JSON and protobuf) in {took:.0f} s: {verdict}")
    raise SystemExit(done.returncode)


if __name__ == "__main__":
    main()
