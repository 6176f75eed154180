"""Coming back after the store refused a write (a full disk), without a restart.

When a load fails DuckDB invalidates the database: nothing more can be read
or written through it. Everything acknowledged is still in the spool, so the
server keeps refusing writes (503) and reads (503), and twice a second checks
whether the disk takes a write again; once it does, the store is opened
anew and a fresh loader replays the spool from the checkpoint, as a restart
would.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Final, Protocol

__all__ = ["Recoverable", "Recovery", "disk_takes_writes"]

log = logging.getLogger("tracekit.server")

_PROBE_BYTES: Final = 1 << 20


def disk_takes_writes(directory: Path, size: int = _PROBE_BYTES) -> bool:
    """Whether ``size`` bytes can be written and synced in ``directory`` now.

    Example:
        >>> import tempfile
        >>> disk_takes_writes(Path(tempfile.gettempdir()))
        True
    """
    probe = directory / f".tracekit-probe-{os.getpid()}"
    try:
        with open(probe, "wb") as out:
            out.write(b"\0" * size)
            out.flush()
            os.fsync(out.fileno())
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


class _Loading(Protocol):
    @property
    def failed(self) -> str | None: ...


class _Spooling(Protocol):
    @property
    def dir(self) -> Path: ...


class _Storing(Protocol):
    @property
    def path(self) -> Path: ...


class Recoverable(Protocol):
    """What recovery reads of the collector it watches (the collector satisfies it).

    Its loader's ``failed`` (why loading stopped), its spool's folder, its
    store's path, and ``reopen``: the store opened anew, the spool replayed.
    """

    @property
    def loader(self) -> _Loading: ...

    @property
    def spool(self) -> _Spooling: ...

    @property
    def store(self) -> _Storing: ...

    def reopen(self) -> None: ...


class Recovery:
    """A thread that reopens the store once a failed load can be retried.

    Args:
        collector: the collector whose store and loader it replaces.
        every: seconds between checks.
    """

    def __init__(self, collector: Recoverable, every: float = 0.5) -> None:
        self.collector = collector
        self.every = every
        self.recoveries = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracekit-recovery", daemon=True)

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (a recovery under way finishes first)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            failed = self.collector.loader.failed
            if failed is None or not self.collector.spool.dir.is_dir():
                continue  # nothing to recover; or the spool is gone: a restart must say so
            if not disk_takes_writes(self.collector.store.path.parent):
                continue
            try:
                self.collector.reopen()
            except Exception as exc:  # still refused: try again later
                log.error("the store cannot be reopened yet: %s", exc)
                continue
            self.recoveries += 1
            log.warning("the store takes writes again; loading resumed (was: %s)", failed)
