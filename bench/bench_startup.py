"""Short commands' start-up: CPU seconds of ``tracekit`` processes, this checkout against a baseline.

Each case is a fresh process through the installed script (what a user waits
for); CPU is the child's user + system time, the median of ``--repeat``
runs, the two sides alternating (PYTHONPATH picks the checkout). Each side's
``tracekit`` is copied and compiled to bytecode first, as pip installs it
(with PYTHONDONTWRITEBYTECODE set, a checkout never compiled would pay
0.1 s a command to compile its sources). The cases
read small inputs, so that what is measured is mostly imports: ``--help``,
``tree FILE`` (v1 and OTLP), ``ingest`` of one small file into a new store,
and the listings ``runs``, ``rejects`` and ``sql`` on a small store. Each
line also says whether the process imported pandas (``-X importtime``).

Run::

    .venv/bin/python bench/bench_startup.py --baseline ../main-baseline --repeat 7
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
TRACEKIT = str(Path(sys.executable).with_name("tracekit"))
SAMPLE = HERE / "sample_traces" / "child_failure.jsonl"
OTLP = HERE / "tests" / "frameworks" / "recordings" / "openai_agents" / "pingpong_limit.otlp.json"


def _env(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "120", "NO_COLOR": "1"}


def cpu_of(argv: list[str], checkout: Path) -> float:
    """The child's CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=_env(checkout), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def imports_pandas(argv: list[str], checkout: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        env=_env(checkout),
        capture_output=True,
        text=True,
    )
    return any(line.rpartition("|")[2].strip() == "pandas" for line in done.stderr.splitlines())


def cases(work: Path) -> dict[str, list[str]]:
    store = work / "listed.duckdb"
    if not store.exists():
        subprocess.run([TRACEKIT, "ingest", str(SAMPLE), "--db", str(store)], check=True,
                       capture_output=True)  # fmt: skip
    db = ["--db", str(store)]
    return {
        "--help": ["--help"],
        "tree FILE (v1)": ["tree", str(SAMPLE)],
        "tree FILE (otlp)": ["tree", str(OTLP)],
        "ingest FILE": ["ingest", str(SAMPLE), "--db", str(work / "new.duckdb")],
        "runs": ["runs", *db],
        "rejects": ["rejects", *db],
        "sql SELECT": ["sql", "SELECT agent, count(*) AS n FROM invocations GROUP BY 1", *db],
    }


def compiled(checkout: Path, into: Path) -> Path:
    """A copy of the checkout's package, compiled to bytecode (the checkout is left as it is)."""
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(checkout / "tracekit", into / "tracekit", ignore=skip)
    compileall.compile_dir(into / "tracekit", quiet=1)
    return into


def _fresh(work: Path) -> None:
    for name in ("new.duckdb", "new.duckdb.wal"):
        (work / name).unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the checkout to compare")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| command | baseline CPU s | this CPU s | this/baseline | pandas (base -> this) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sides = {
            "baseline": compiled(args.baseline.resolve(), work / "baseline"),
            "this": compiled(HERE, work / "this"),
        }
        for name, argv in cases(work).items():
            times: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(args.repeat):
                for side, checkout in sides.items():
                    _fresh(work)
                    times[side].append(cpu_of([TRACEKIT, *argv], checkout))
            _fresh(work)
            pandas = [imports_pandas([TRACEKIT, *argv], checkout) for checkout in sides.values()]
            base, this = (statistics.median(times[side]) for side in sides)
            said = " -> ".join("yes" if p else "no" for p in pandas)
            print(f"| `{name}` | {base:.3f} | {this:.3f} | {this / base:.2f} | {said} |")


if __name__ == "__main__":
    main()
