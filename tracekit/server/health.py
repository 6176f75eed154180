"""What ``/healthz`` checks beyond the store: the child processes, and stages that stall.

A stage may stop without failing: a decoding process stopped (``SIGSTOP``, a
debugger) leaves requests waiting for its answer, and work piles up
while nothing raises. So the server looks at its children's state as the
kernel reports it, and at the time since each stage last made progress.

Example:
    >>> import os
    >>> process_state(os.getpid()) in ("R", "S")
    True
    >>> stalled_for(waiting=0, since=0.0, now=100.0, after=30.0) is None
    True
"""

from __future__ import annotations

import contextlib
from typing import Final

__all__ = ["STALL_SECONDS", "child_trouble", "cpu_ticks", "process_state", "stalled_for"]

#: Seconds a stage may go without progress while work waits before it is called stalled.
STALL_SECONDS: Final = 15.0
_STATES: Final = {"T": "stopped", "t": "stopped (traced)", "Z": "gone (a zombie)", "X": "gone"}


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of a process (``R``, ``S``, ``T``...), or None if gone.

    Elsewhere than Linux (no ``/proc``) it is ``?``.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None
    except OSError:
        return "?"
    with contextlib.suppress(IndexError):
        return text.rsplit(")", 1)[1].split()[0]  # the name may hold spaces and parentheses
    return "?"


def cpu_ticks(pid: int) -> int:
    """The CPU time a process has used, in clock ticks (0 if it cannot be read).

    A process that works uses CPU: one whose ticks do not move is waiting or stuck.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime and stime
    except (OSError, IndexError, ValueError):
        return 0


def child_trouble(name: str, pid: int | None) -> str | None:
    """Why the child process ``name`` cannot work now (stopped, gone), or None."""
    if pid is None:
        return None
    state = process_state(pid)
    if state is None:
        return f"the {name} process ({pid}) is gone"
    if state in _STATES:
        return f"the {name} process ({pid}) is {_STATES[state]}"
    return None


def stalled_for(*, waiting: int, since: float, now: float, after: float) -> str | None:
    """``"no progress for N s"`` when work waits and nothing moved for ``after`` seconds."""
    if waiting and now - since > after:
        return f"no progress for {now - since:.0f} s"
    return None
