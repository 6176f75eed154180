"""Shared helpers of the tree tests: record builders and the installed CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tracekit.events import Enter, Event, Exit, Node, encode_event

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
TRACEKIT = str(Path(sys.executable).parent / "tracekit")


def node(ts: float, run: str, id: str, **kw: Any) -> Node:
    return Node(ts=ts, runId=run, id=id, **kw)


def enter(ts: float, inv: str, run: str, parent: str | None, agent: str, **kw: Any) -> Enter:
    kw.setdefault("node", "delegate")
    return Enter(ts=ts, invocationId=inv, runId=run, parentRunId=parent, agent=agent, **kw)


def exit_(
    ts: float, inv: str, run: str, parent: str | None, agent: str, dur: float, **kw: Any
) -> Exit:
    kw.setdefault("node", "delegate")
    return Exit(
        ts=ts, invocationId=inv, runId=run, parentRunId=parent, agent=agent, durationMs=dur, **kw
    )


def call(
    start: float, end: float, inv: str, run: str, parent: str | None, agent: str, **kw: Any
) -> list[Event]:
    """An enter and its ok exit."""
    return [
        enter(start, inv, run, parent, agent),
        exit_(end, inv, run, parent, agent, end - start, **kw),
    ]


def write_jsonl(path: Path, events: list[Event]) -> Path:
    path.write_bytes(b"".join(encode_event(e) + b"\n" for e in events))
    return path


def run_cli(
    *args: str, input: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``tracekit`` console script; colour off unless asked."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    full_env.update(env or {})
    result = subprocess.run(
        [TRACEKIT, *args],
        input=input,
        capture_output=True,
        env={k: v for k, v in full_env.items() if v is not None},
        timeout=60,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def cli_golden(tree: Path) -> str:
    """What ``tracekit tree`` prints for a golden tree: the tree (``<case>.tree.txt``, which
    the library prints too), then why its runs ended as they did (``<case>.why.txt``, there
    when a run did not end ok)."""
    why = tree.with_name(tree.name.replace(".tree.txt", ".why.txt"))
    return tree.read_text() + (why.read_text() if why.exists() else "")
