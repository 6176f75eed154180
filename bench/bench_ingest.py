"""Ingest a simulated fleet into a store, against DuckDB's raw read_json of the same file.

Usage:
    .venv/bin/python bench/bench_ingest.py [--events 5000000] [--repeat 1] [--dir DIR]

The fleet is written once by ``tracekit simulate --events N --seed 7`` (kept in
DIR for later runs). Then, alternating, each in a fresh child process so that
its peak RSS is its own (``os.wait4``):

* raw: ``CREATE TABLE raw AS SELECT * FROM read_json(FILE, columns={...})`` into
  a new DuckDB file, with the v1 columns given explicitly (no sampling);
* tracekit: ``Store(new file).ingest(FILE)``: parse, check, reject, dedupe,
  store events and derive invocations, steps and runs, all committed.

Figures are medians over ``--repeat``; the ratio is tracekit / raw, in wall
time and in CPU time (user + system of the child, ``os.wait4``: the steadier
figure on a shared machine). ``--baseline DIR`` adds a third side in each
repetition: the same ingest with ``PYTHONPATH=DIR`` (another checkout's
``tracekit``, e.g. ``git archive main tracekit | tar -x -C DIR``).

Then the recovery cases, each timed as a ratio to the fresh ingest of the same
file in the same repetition (``--no-recovery`` leaves them out):

* killed in load: an ingest SIGKILLed once it has read half the file (its
  read offset, seen in ``/proc/PID/fdinfo``), then the ingest that finishes it;
* killed in derive: an ingest SIGKILLed once it has read the whole file and
  closed it (the derive runs), then the ingest that finishes it;
* all duplicates: a byte-identical copy of the file under another name,
  ingested into the store that already holds it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

_COLUMNS = (
    "{'type': 'VARCHAR', 'ts': 'DOUBLE', 'seq': 'BIGINT', 'service': 'VARCHAR',"
    " 'traceId': 'VARCHAR', 'runId': 'VARCHAR', 'parentRunId': 'VARCHAR',"
    " 'invocationId': 'VARCHAR', 'agent': 'VARCHAR', 'node': 'VARCHAR', 'kind': 'VARCHAR',"
    " 'id': 'VARCHAR', 'ok': 'BOOLEAN', 'durationMs': 'DOUBLE', 'status': 'VARCHAR',"
    " 'failure': 'VARCHAR', 'error': 'JSON', 'attrs': 'JSON'}"
)

_RAW = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[2])
con.execute("SET enable_progress_bar = false")
start = time.perf_counter()
con.execute(f"CREATE TABLE raw AS SELECT * FROM read_json('{sys.argv[1]}',"
            f" format='newline_delimited', columns={sys.argv[3]})")
con.close()
n = duckdb.connect(sys.argv[2]).execute("SELECT count(*) FROM raw").fetchone()[0]
print(time.perf_counter() - start, n)
"""

_TRACEKIT = """
import sys, time
from tracekit import Store
start = time.perf_counter()
with Store(sys.argv[2]) as store:
    report = store.ingest(sys.argv[1])
print(time.perf_counter() - start, report.totals.accepted)
print(report.reconciliation(), file=sys.stderr)
"""


def fleet(events: int, folder: Path) -> Path:
    path = folder / f"fleet-{events}.jsonl"
    if not path.exists():
        print(f"writing {events:,} events to {path} ...", flush=True)
        subprocess.run(
            [
                str(BIN / "tracekit"),
                "simulate",
                "--events",
                str(events),
                "--seed",
                "7",
                "--out",
                str(path),
            ],
            check=True,
        )
    return path


CPU: dict[str, list[float]] = {}


def child(
    code: str, *args: str, path: str | None = None, side: str = ""
) -> tuple[float, int, float, str]:
    """Run ``code`` in a fresh interpreter; return seconds, rows, peak RSS (MB), stderr.

    Its CPU seconds (user + system) are added to ``CPU[side]``.
    """
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # so that the current directory shadows no checkout
    )
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"child failed: {err}")
    if side:
        CPU.setdefault(side, []).append(usage.ru_utime + usage.ru_stime)
    seconds, rows = out.strip().splitlines()[-1].split()
    return float(seconds), int(rows), usage.ru_maxrss / 1024, err.strip()


def offsets(pid: int, path: Path) -> list[int] | None:
    """The read offsets of ``pid``'s open descriptors of ``path``; None once it has exited."""
    fds = Path(f"/proc/{pid}/fd")
    found = []
    try:
        for fd in fds.iterdir():
            try:
                if fd.readlink() == path:
                    text = (Path(f"/proc/{pid}/fdinfo") / fd.name).read_text()
                    found.append(int(text.split()[1]))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue
    except (FileNotFoundError, ProcessLookupError):
        return None
    return found


def killed(path: Path, store: Path, phase: str) -> str:
    """Start an ingest of ``path`` and SIGKILL it in ``phase`` (load or derive)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _TRACEKIT, str(path), str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    size, seen_end = path.stat().st_size, False
    while proc.poll() is None:
        found = offsets(proc.pid, path) or []
        if phase == "load" and any(o >= size // 2 for o in found):
            break
        if phase == "derive" and seen_end and not found:
            time.sleep(0.3)  # past the last fingerprint read, into the derive
            break
        seen_end = seen_end or size in found
        time.sleep(0.002)
    proc.kill()
    proc.wait()
    return "killed" if proc.returncode == -9 else f"ended first ({proc.returncode})"


def recovery(path: Path, work: Path) -> dict[str, float]:
    """Seconds of each recovery case (see the module's docstring)."""
    out: dict[str, float] = {}
    for phase in ("load", "derive"):
        store = work / f"killed-{phase}.duckdb"
        state = killed(path, store, phase)
        if state != "killed":
            raise SystemExit(f"the ingest to kill in {phase} {state}: use more --events")
        out[phase] = child(_TRACEKIT, str(path), str(store), path=str(ROOT))[0]
        (work / f"killed-{phase}.duckdb").unlink()
    copy = work / f"copy-of-{path.name}"
    shutil.copyfile(path, copy)
    out["duplicates"] = child(_TRACEKIT, str(copy), str(work / "store.duckdb"), path=str(ROOT))[0]
    return out


# Columns that say when, not what: they differ between any two ingests.
_CLOCKS = {"classified_at", "started_at", "finished_at", "applied_at"}
_TABLES = (
    "events",
    "invocations",
    "steps",
    "runs",
    "closure",
    "rejects",
    "fleet_calls",
    "ingest_log",
)


def compare(ours: Path, base: Path) -> str:
    """Rows only in one store, table by table (EXCEPT ALL both ways, the clock columns aside)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"ATTACH '{ours}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{base}' AS b (READ_ONLY)")
    out = []
    for table in _TABLES:
        names = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'a'"
                " AND table_name = ? ORDER BY column_index",
                [table],
            ).fetchall()
        ]
        cols = ", ".join(f'"{n}"' for n in names if n not in _CLOCKS)
        only = [
            con.execute(
                f"SELECT count(*) FROM (SELECT {cols} FROM {x}.{table}"
                f" EXCEPT ALL SELECT {cols} FROM {y}.{table})"
            ).fetchall()[0][0]
            for x, y in (("a", "b"), ("b", "a"))
        ]
        rows = con.execute(f"SELECT count(*) FROM a.{table}").fetchall()[0][0]
        out.append(f"{table} {rows:,} rows, {only[0]}/{only[1]} apart")
    return "; ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tracekit-bench")
    parser.add_argument("--no-recovery", action="store_true", help="only the fresh ingest")
    parser.add_argument("--baseline", help="a checkout whose tracekit ingests too, side by side")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="with --baseline: check once that both stores hold the same rows, table by table",
    )
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    path = fleet(args.events, args.dir)
    size_mb = path.stat().st_size / 2**20
    raw_s, ours_s, raw_rss, ours_rss = [], [], [], []
    line = ""
    cases: dict[str, list[float]] = {"load": [], "derive": [], "duplicates": []}
    case_s: dict[str, list[float]] = {"load": [], "derive": [], "duplicates": []}
    loads: list[float] = []
    base_s: list[float] = []
    base_line = compared = ""
    for rep in range(args.repeat):
        work = Path(tempfile.mkdtemp(dir=args.dir))
        try:
            s, n_raw, rss, _ = child(
                _RAW, str(path), str(work / "raw.duckdb"), _COLUMNS, side="raw"
            )
            raw_s.append(s)
            raw_rss.append(rss)
            if args.baseline:
                s, _, _, base_line = child(
                    _TRACEKIT,
                    str(path),
                    str(work / "base.duckdb"),
                    path=args.baseline,
                    side="baseline",
                )
                base_s.append(s)
            s, n_ours, rss, line = child(
                _TRACEKIT, str(path), str(work / "store.duckdb"), path=str(ROOT), side="tracekit"
            )
            ours_s.append(s)
            ours_rss.append(rss)
            # In the last repetition only: the comparison's memory (in this process)
            # would be inherited as the peak RSS of every child started after it.
            if args.baseline and args.compare and rep == args.repeat - 1:
                compared = compare(work / "store.duckdb", work / "base.duckdb")
            if not args.no_recovery:
                for case, seconds in recovery(path, work).items():
                    cases[case].append(seconds / s)
                    case_s[case].append(seconds)
            loads.append(os.getloadavg()[0])
        finally:
            shutil.rmtree(work)
    raw, ours = statistics.median(raw_s), statistics.median(ours_s)
    load = os.getloadavg()[0]
    print(f"{n_raw:,} events, {size_mb:,.0f} MB, median of {args.repeat}, load average {load:.1f}")
    print(
        f"  raw read_json into a bare table  {raw:7.2f} s  {n_raw / raw:>10,.0f} events/s"
        f"  peak RSS {max(raw_rss):6.0f} MB   1.00x"
    )
    print(
        f"  tracekit ingest (all tables)     {ours:7.2f} s  {n_ours / ours:>10,.0f} events/s"
        f"  peak RSS {max(ours_rss):6.0f} MB  {ours / raw:5.2f}x"
    )
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    if base_s:
        base = statistics.median(base_s)
        print(
            f"  baseline ingest ({args.baseline})  {base:7.2f} s  {n_ours / base:>10,.0f} events/s"
            f"  {base / raw:5.2f}x"
        )
    print(f"  {line}")
    if base_line and base_line != line:
        print(f"  baseline: {base_line}")
    if compared:
        print(f"  same rows as the baseline's store (only ours/only theirs): {compared}")
    print(
        "  CPU seconds (user + system), medians: "
        + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
        + "".join(f"; {k} / raw {v / cpu['raw']:.2f}x" for k, v in cpu.items() if k != "raw")
    )
    names = {
        "load": "recovery after SIGKILL in load",
        "derive": "recovery after SIGKILL in derive",
        "duplicates": "all duplicates (renamed copy)",
    }
    for case, ratios in cases.items():
        if ratios:
            print(
                f"  {names[case]:<34} {statistics.median(case_s[case]):7.2f} s"
                f"  {statistics.median(ratios):5.2f}x the fresh ingest"
                f"  (ratios {', '.join(f'{r:.2f}' for r in ratios)})"
            )
    if loads:
        print(f"  load average after each repetition: {', '.join(f'{x:.1f}' for x in loads)}")
    print(
        json.dumps(
            {
                "events": n_ours,
                "raw_s": raw_s,
                "tracekit_s": ours_s,
                "raw_rss_mb": raw_rss,
                "tracekit_rss_mb": ours_rss,
                "baseline_s": base_s,
                "cpu_s": CPU,
                "recovery_ratios": cases,
            }
        )
    )


if __name__ == "__main__":
    main()
