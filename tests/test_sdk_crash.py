"""A process killed mid-run leaves a readable file with its open invocations.

With ``batch=1`` every record is on disk as it is written; with the default
buffered sink, within the sink's ``interval`` (its background flush), so the
tests wait for the records the agent wrote before it hung, then kill it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _sdk_helpers import paired, read_jsonl

from tracekit.events import Node, RunEnd

_CRASHER = """
import json, sys, time
from tracekit.sdk import AgentTracer, JsonlSink
tk = AgentTracer(JsonlSink(sys.argv[1], **json.loads(sys.argv[2])))
with tk.run("front_desk"):
    with tk.step("sort"):
        pass
    with tk.handoff("billing", node="hand_over"):
        with tk.delegate("invoices", node="escalate"):
            pass
        with tk.delegate("refunds", node="escalate"):
            print("inside", flush=True)
            time.sleep(60)
"""


#: The records written before the agent hangs: run.start, node, 3 enters, 1 exit.
_BEFORE_HANG = 6
_MODES = {"buffered (default)": "{}", "batch=1": '{"batch": 1}'}


def _killed_mid_run(path: Path, sink_args: str) -> None:
    """Start the crasher, wait until its records are on disk, SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _CRASHER, str(path), sink_args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "inside"
    deadline = time.monotonic() + 30  # the flush is due within 0.2 s; the machine may be busy
    while _lines(path) < _BEFORE_HANG and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    proc.stdout.close()


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.parametrize("mode", list(_MODES))
def test_sigkill_leaves_unfinished_invocations_running(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "crash.jsonl"
    _killed_mid_run(path, _MODES[mode])
    events = read_jsonl(path)  # every line parses: nothing half-written
    pairs = paired(events)
    running = sorted(enter.agent for enter, exit_ in pairs.values() if exit_ is None)
    finished = sorted(enter.agent for enter, exit_ in pairs.values() if exit_ is not None)
    assert running == ["billing", "refunds"] and finished == ["invoices"]
    assert not any(isinstance(e, RunEnd) for e in events)
    assert [e.id for e in events if isinstance(e, Node)] == ["sort"]


def test_tracekit_tree_shows_the_killed_run(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    _killed_mid_run(path, _MODES["buffered (default)"])
    tracekit = shutil.which("tracekit", path=str(Path(sys.executable).parent))
    assert tracekit is not None
    shown = subprocess.run(
        [tracekit, "tree", "--color", "never", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "sort"
    assert lines[1] == "hand_over -> billing (handoff, running)"
    assert lines[2].startswith("  escalate -> invoices (ok, ")
    assert lines[3] == "  escalate -> refunds (running)"
    assert "2 enters without exit" in shown.stderr
