"""Helpers for the store tests: small traces written on the spot, the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TRACEKIT = str(Path(sys.executable).parent / "tracekit")


def line(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


def run_lines(
    run: str, *, agent: str = "front", child: str = "billing", ok: bool = True
) -> list[str]:
    """A root run that delegates once: 6 records."""
    inv = f"{run}-i1"
    exit_: dict[str, Any] = {
        "type": "exit",
        "ts": 5,
        "invocationId": inv,
        "runId": f"{run}/c",
        "parentRunId": run,
        "agent": child,
        "node": "hand_over",
        "ok": ok,
        "durationMs": 3,
    }
    if not ok:
        exit_["error"] = {"code": "BOOM", "message": "it broke"}
    return [
        line({"type": "run.start", "ts": 1, "runId": run, "agent": agent, "service": "svc"}),
        line({"type": "node", "ts": 2, "runId": run, "id": "classify"}),
        line(
            {
                "type": "enter",
                "ts": 2,
                "invocationId": inv,
                "runId": f"{run}/c",
                "parentRunId": run,
                "agent": child,
                "node": "hand_over",
                "service": "svc",
            }
        ),
        line({"type": "node", "ts": 3, "runId": f"{run}/c", "id": "hand_over/billing/sort"}),
        exit_ and line(exit_),
        line({"type": "run.end", "ts": 6, "runId": run, "ok": ok, "durationMs": 5}),
    ]


def fleet(runs: int) -> list[str]:
    out: list[str] = []
    for n in range(runs):
        out += run_lines(f"r{n}", ok=n % 3 != 0)
    return out


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines))
    return path


def cli(
    *args: str,
    db: Path | None = None,
    stdin: str | None = None,
    check: bool = True,
    columns: int = 200,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns)}
    argv = [TRACEKIT, *args] + (["--db", str(db)] if db is not None else [])
    done = subprocess.run(argv, capture_output=True, text=True, input=stdin, env=env, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done
