"""The mapping in a process of its own: spooled spans to v1 records, beside the load.

Holding spans by trace and mapping complete traces is Python work, under one
GIL; the load is mostly DuckDB's, which runs without it. So the loader hands
each cycle's spool entries (their payloads, as the spool holds them) to a
second process, and loads what the previous cycle mapped while this one is
mapped. The process holds the :class:`~tracekit.intake.assemble.TraceAssembler`
(when a trace is complete) and the
:class:`~tracekit.intake.otlp.convert.OtlpConverter` (the mapping); it says,
with each cycle's records, which traces it took and the first spool position
it still holds, so the loader checkpoints only past what the store has.

It is started with ``spawn`` (no copy of the server's threads, sockets or
store), ignores Ctrl-C (the server stops it gracefully, after the last cycle)
and ends when its pipe closes (the server gone, even by SIGKILL).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tracekit._util.gcpause import gc_paused
from tracekit._util.quarantine import reason_of

__all__ = [
    "MapRequest",
    "Mapped",
    "MapperFailedError",
    "MapperProcess",
    "Mapping",
    "MappingSettings",
    "name_process",
]


@dataclass(frozen=True)
class MappingSettings:
    """How the assembler holds traces (see :class:`~tracekit.intake.assemble.TraceAssembler`)."""

    settle: float
    linger: float
    max_pending: int
    remember: int
    #: Traces mapped before a crash: their spans in a replayed entry are not mapped again.
    replay_taken: dict[str, int] = field(default_factory=dict)


@dataclass
class MapRequest:
    """One cycle: spool entries as ``(start, payload, arrived)``, and what to take."""

    now: float
    final: bool
    end: int  # the end offset of the last entry fed so far
    entries: list[tuple[int, bytes, float]]
    forget_replay: bool = False  # the replay is all fed: stop filtering


@dataclass
class Mapped:
    """What one cycle gave: records, refusals, and where the checkpoint may go."""

    records: list[bytes]
    refused: list[tuple[str, str]]  # (raw, reason): at the request first, then in the mapping
    taken: dict[str, int]  # trace -> the start of the last entry with a span of it
    first_held: int  # the first spool position with a span still held
    pending: int  # spans held
    spans_fed: int  # spans fed since the process started
    skipped: int  # spans outside any agent run, among those mapped
    cpu: float  # this process's CPU seconds so far
    refused_later: int = 0  # spans among ``refused`` that the mapping refused (not the request)


class Mapping:
    """The mapping's state: what the process runs (also usable in-process).

    Example:
        >>> mapping = Mapping(MappingSettings(settle=1.0, linger=300.0, max_pending=1000, remember=8))
        >>> mapping.cycle(MapRequest(now=0.0, final=True, end=0, entries=[])).pending
        0
    """

    def __init__(self, settings: MappingSettings) -> None:
        from tracekit.intake.assemble import TraceAssembler
        from tracekit.intake.otlp.convert import OtlpConverter

        self.assembler = TraceAssembler(
            settle=settings.settle,
            linger=settings.linger,
            max_pending=settings.max_pending,
            remember=settings.remember,
        )
        self.converter = OtlpConverter(self.assembler)
        self.replay_taken = dict(settings.replay_taken)
        self.spans_fed = 0

    def cycle(self, request: MapRequest) -> Mapped:
        """Feed the entries, take the traces that are complete, map them."""
        from tracekit.events import encode_event

        refused = self._feed(request.entries)
        if request.forget_replay:
            self.replay_taken = {}
        done = self.assembler.ready(now=request.now, final=request.final, incomplete=False)
        taken = {trace: self.assembler.last_position(trace) for trace in done}
        pairs = self.converter.take(done) if done else []
        records = [encode_event(event) for _, event in pairs]
        later = [(text, reason) for _, text, reason in self.converter.take_rejects()]
        refused += later
        return Mapped(
            records=records,
            refused=refused,
            taken=taken,
            first_held=self.assembler.first_held(default=request.end),
            pending=self.converter.pending,
            spans_fed=self.spans_fed,
            skipped=self.converter.skipped,
            cpu=time.process_time(),
            refused_later=len(later),
        )

    def _feed(self, entries: list[tuple[int, bytes, float]]) -> list[tuple[str, str]]:
        from tracekit.server.decode import span_of
        from tracekit.server.spool import decode_payload

        refused: list[tuple[str, str]] = []
        for start, payload, arrived in entries:
            try:
                entry = decode_payload(payload)
                spans = [span_of(row) for row in entry.spans]
            except Exception as exc:  # never retried forever: refused, named, the rest goes on
                refused.append((f"spool entry at byte {start}", f"unreadable: {reason_of(exc)}"))
                continue
            refused.extend(entry.rejects)
            if self.replay_taken:  # a replay: spans mapped before the crash are not mapped again
                spans = [s for s in spans if self.replay_taken.get(s.trace, -1) < start]
            self.converter.feed_spans(spans, line=start, now=arrived)
            self.spans_fed += len(spans)
        return refused


def _serve(conn: Connection, settings: MappingSettings) -> None:
    """The process: answer each request with its cycle until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops us
    name_process("tracekit-mapper")
    mapping = Mapping(settings)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        try:
            # The spans held for their traces are many acyclic objects: full
            # collections inside a cycle would walk them again and again.
            with gc_paused():
                answer: Any = mapping.cycle(request)
        except Exception as exc:  # the server fails the load and keeps the spool
            answer = f"{type(exc).__name__}: {exc}"
        conn.send(answer)


def name_process(name: str) -> None:
    """Name this process as ``ps`` and ``top`` show it (Linux; elsewhere nothing happens)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(name[:15])


class MapperFailedError(RuntimeError):
    """The mapping process failed or went away: the load fails, the spool is kept."""


class MapperProcess:
    """The mapping process, driven one cycle at a time: :meth:`send`, then :meth:`receive`."""

    def __init__(self, settings: MappingSettings) -> None:
        context = mp.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, settings), name="tracekit-mapper", daemon=True
        )
        self._process.start()
        child.close()
        self._awaiting = False  # a cycle sent whose answer is not yet received
        self.cpu = 0.0  # the process's CPU seconds, as of its last answer

    def send(self, request: MapRequest) -> None:
        """Hand a cycle to the process (it maps while the caller does something else)."""
        try:
            self._conn.send(request)
        except (OSError, ValueError) as exc:
            raise MapperFailedError(f"the mapping process is gone ({exc})") from None
        self._awaiting = True

    def receive(self) -> Mapped:
        """The cycle sent last, mapped.

        Raises:
            MapperFailedError: the mapping raised, or the process died.
        """
        try:
            answer = self._conn.recv()
            self._awaiting = False
        except (EOFError, OSError) as exc:
            raise MapperFailedError(f"the mapping process is gone ({exc!r})") from None
        if isinstance(answer, str):
            raise MapperFailedError(f"the mapping failed: {answer}")
        self.cpu = answer.cpu
        return answer

    @property
    def pid(self) -> int | None:
        """The process id (None before it started)."""
        return self._process.pid

    def check(self) -> None:
        """Raise if the process is gone (killed, out of memory) while idle.

        Raises:
            MapperFailedError: it has exited.
        """
        if not self._process.is_alive():
            raise MapperFailedError(f"the mapping process exited (status {self._process.exitcode})")

    def close(self) -> None:
        """Stop the process (after its last cycle); at once if an answer was never taken.

        A load that failed between :meth:`send` and :meth:`receive` leaves the
        process writing an answer nobody reads (it blocks once the pipe is
        full): its state is dropped anyway (the spool is replayed), so it is
        killed rather than waited for.
        """
        if self._awaiting:
            self._process.kill()
        with contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()
