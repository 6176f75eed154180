"""Waiting for a store another process holds, and saying who holds it.

DuckDB lets one process write a file, or several read it, never both. A
reader that finds an ingest running waits for it (with backoff, up to a
bound) instead of failing at once; when it gives up, the message names the
holder from DuckDB's lock error (its PID) and ``/proc/PID/cmdline``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tracekit._util.text import escape
from tracekit.errors import StoreLockedError

__all__ = ["describe_holder", "lock_error", "retry_locked"]

_PID = re.compile(r"\(PID (\d+)\)")
_FIRST_PAUSE = 0.05
_LONGEST_PAUSE = 0.5
_LONGEST_COMMAND = 120

T = TypeVar("T")


def retry_locked(attempt: Callable[[], T], wait: float) -> T:
    """Call ``attempt`` until it stops raising :class:`StoreLockedError`, for ``wait`` seconds.

    The pause between tries doubles from 50 ms to half a second, so a short
    ingest is noticed soon and a long one costs little. ``wait`` 0 tries once.

    Raises:
        StoreLockedError: still locked when the time is up (the last error).
    """
    deadline = time.monotonic() + max(wait, 0.0)
    pause = _FIRST_PAUSE
    while True:
        try:
            return attempt()
        except StoreLockedError as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                if wait > 0:
                    exc.args = (f"{exc.args[0]}; gave up after waiting {wait:g} s",)
                raise
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)


def lock_error(path: Path, text: str) -> StoreLockedError:
    """The error for DuckDB's lock message ``text``: who holds ``path``, and what to do."""
    match = _PID.search(text)
    pid = int(match.group(1)) if match else None
    command = describe_holder(pid) if pid is not None else None
    if command is not None:
        holder = f"`{command}` (pid {pid})"
    elif pid is not None:
        holder = f"process {pid}"
    else:
        holder = "another process"
    if command is not None and " ingest" in f" {command}":
        hint = "Wait for that ingest to finish, or use another --db file."
    else:
        hint = "Wait for that process to finish or close the store, or use another --db file."
    return StoreLockedError(f"{path}: the store is locked by {holder}", hint=hint)


def describe_holder(pid: int) -> str | None:
    """The command line of process ``pid``, as a person would type it; None if unreadable.

    A console script runs as ``python /path/bin/tracekit ...``: the interpreter
    is dropped and paths are cut to their last part, giving ``tracekit ingest ...``.

    Example:
        >>> describe_holder(os.getpid()) is not None
        True
    """
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    if not words:
        return None
    interpreter = os.path.basename(words[0]).startswith("python")
    if interpreter and len(words) > 1 and not words[1].startswith("-"):
        words = words[1:]
    words[0] = os.path.basename(words[0])
    command = escape(" ".join(words))
    if len(command) > _LONGEST_COMMAND:
        command = command[: _LONGEST_COMMAND - 1] + "…"
    return command
