"""The append-only spool: every accepted batch is on disk (fsynced) before it is acknowledged.

Batches are framed (length, CRC-32, msgpack) and appended to segment files
named by the global offset they start at. One writer thread owns the file:
requests hand it their frames and wait; it writes whatever has queued up,
fsyncs once, and wakes them all (group commit: concurrent requests share one
fsync). The loader records how far the store holds what the spool has
(:class:`Checkpoint`); after a crash the spool is replayed from there, and a
torn frame at the end (never acknowledged: its fsync never returned) is cut off.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import msgspec

from tracekit.errors import TracekitError

__all__ = ["Checkpoint", "Entry", "Spool", "SpoolFullError", "decode_payload", "encode_payload"]

log = logging.getLogger("tracekit.server")

_MAGIC: Final = b"TKS1"
_HEADER: Final = struct.Struct("<4sII")  # magic, payload length, crc32 of payload
_SEGMENT_BYTES: Final = 64 << 20
_SUFFIX: Final = ".seg"


class SpoolFullError(TracekitError):
    """The spool holds as much unloaded data as it may: the client should retry later."""


class Entry(msgspec.Struct, array_like=True):
    """One accepted batch: spans as tuples (see :mod:`tracekit.server.decode`), v1 lines, rejects."""

    source: str
    spans: list[tuple] = []
    lines: list[bytes] = []
    rejects: list[tuple[str, str]] = []


_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(Entry)


def encode_payload(entry: Entry) -> bytes:
    """An entry as a frame's payload (what :meth:`Spool.append_payload` takes)."""
    return _ENCODER.encode(entry)


def decode_payload(payload: bytes) -> Entry:
    """An entry back from its frame's payload (what :meth:`Spool.replay_raw` and ``deliver`` give).

    Example:
        >>> decode_payload(_ENCODER.encode(Entry("serve:records", lines=[b"{}"]))).lines
        [b'{}']
    """
    return _DECODER.decode(payload)


@dataclass
class Checkpoint:
    """How far the store holds the spool, and the traces already mapped past that point.

    ``taken`` maps a trace id to the start of the last spool entry that had
    a span of it when it was mapped: on replay those spans are not mapped
    again (they would be mapped without the rest of their trace).
    """

    position: int = 0
    taken: dict[str, int] = field(default_factory=dict)


@dataclass
class _Pending:
    header: bytes
    payload: bytes
    entry: Entry | None  # None when appended as a payload (spans decoded in another process)
    items: int  # spans or lines
    future: Future[int]

    @property
    def size(self) -> int:
        return len(self.header) + len(self.payload)


class Spool:
    """The spool directory ``<db>.spool/``: segments, a checkpoint, one writer thread.

    Args:
        directory: where the segments live (created).
        limit: bytes acknowledged but not yet handed to the loader before
            :meth:`append` refuses with :class:`SpoolFullError`.
        deliver: called on the writer thread with ``(start, end, entry, payload,
            items)`` for each entry once it is durable (the loader's queue);
            ``payload`` is the entry as the spool holds it (:func:`decode_payload`),
            ``entry`` None if it was appended as a payload, ``items`` its spans or lines.
    """

    def __init__(
        self,
        directory: Path,
        *,
        limit: int,
        deliver: Callable[[int, int, Entry | None, bytes, int], None],
    ) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.limit = limit
        self._deliver = deliver
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._queued_bytes = 0
        self._stopping = False
        self.loaded = 0  # bytes handed on and taken by the loader (set by it)
        self.cpu = 0.0  # the writer thread's CPU seconds (framing, writing, delivering)
        self.position = self._repair()
        self._file = self._open_segment()
        self._thread = threading.Thread(target=self._run, name="tracekit-spool", daemon=True)

    # -- writing ---------------------------------------------------------------
    def start(self) -> None:
        """Start the writer thread."""
        self._thread.start()

    def backlog(self) -> int:
        """Bytes acknowledged (or queued) but not yet taken by the loader."""
        return self.position + self._queued_bytes - self.loaded

    def append(self, entry: Entry) -> Future[int]:
        """Queue an entry; the future resolves to its end offset once it is fsynced.

        Raises:
            SpoolFullError: the backlog is over the limit (nothing was queued).
        """
        items = len(entry.spans) + len(entry.lines)
        return self.append_payload(_ENCODER.encode(entry), items, entry)

    def append_payload(self, payload: bytes, items: int, entry: Entry | None = None) -> Future[int]:
        """:meth:`append` of an entry already encoded (:func:`encode_payload`) with ``items`` spans.

        Raises:
            SpoolFullError: the backlog is over the limit (nothing was queued).
        """
        header = _HEADER.pack(_MAGIC, len(payload), zlib.crc32(payload))
        size = len(header) + len(payload)
        future: Future[int] = Future()
        with self._cond:
            if self._stopping:
                raise SpoolFullError("the server is stopping")
            if self.backlog() + size > self.limit and self.backlog() > 0:
                raise SpoolFullError(
                    f"the spool holds {self.backlog()} bytes not yet loaded (limit {self.limit})"
                )
            self._queue.append(_Pending(header, payload, entry, items, future))
            self._queued_bytes += size
            self._cond.notify()
        return future

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                batch, self._queue = self._queue, []
                if not batch and self._stopping:
                    return
            if self._file.tell() >= _SEGMENT_BYTES:
                self._file.close()
                self._file = self._open_segment()
            before = self._file.tell()
            clock = time.thread_time()
            try:
                self._write(batch)
            except OSError as exc:  # a full disk: refuse these, keep serving
                log.error("spool write failed: %s", exc)
                self._rewind(before)
                with self._cond:
                    self._queued_bytes -= sum(p.size for p in batch)
                for pending in batch:
                    pending.future.set_exception(SpoolFullError(f"cannot write the spool ({exc})"))
            self.cpu += time.thread_time() - clock

    def _rewind(self, size: int) -> None:
        """Cut off what a failed write left of its frames, so the next frame follows a whole one."""
        path = self._file.name
        with contextlib.suppress(OSError):
            self._file.close()  # its flush may fail again; the file is closed all the same
        try:
            os.truncate(path, size)
        except OSError as exc:
            log.error("cannot cut the spool back to %d bytes: %s", size, exc)
        self._file = open(path, "ab")  # noqa: SIM115 - owned by the writer thread until stop

    def _write(self, batch: list[_Pending]) -> None:
        start = self.position
        self._file.write(b"".join(part for p in batch for part in (p.header, p.payload)))
        self._file.flush()
        os.fdatasync(self._file.fileno())
        for pending in batch:
            end = start + pending.size
            self._deliver(start, end, pending.entry, pending.payload, pending.items)
            with self._cond:
                self.position = end
                self._queued_bytes -= pending.size
            pending.future.set_result(end)
            start = end

    def stop(self) -> None:
        """Write what is queued, then stop the writer thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()
        self._file.close()

    # -- segments --------------------------------------------------------------
    def _segments(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.dir.glob("*" + _SUFFIX):
            with contextlib.suppress(ValueError):
                found.append((int(path.stem), path))
        return sorted(found)

    def _open_segment(self) -> io.BufferedWriter:
        segments = self._segments()
        if segments and segments[-1][0] + segments[-1][1].stat().st_size == self.position:
            path = segments[-1][1]
        else:
            path = self.dir / f"{self.position:020d}{_SUFFIX}"
        handle = open(path, "ab")  # noqa: SIM115 - owned by the writer thread until stop
        _fsync_dir(self.dir)
        return handle

    def _repair(self) -> int:
        """Cut a torn last frame off; return the end offset of the spool."""
        segments = self._segments()
        if not segments:
            return self.read_checkpoint().position
        start, path = segments[-1]
        good = 0
        for _, end, _payload in _frames(path, start, 0):
            good = end - start
        if good < path.stat().st_size:
            log.warning("spool %s: cut a torn frame at byte %d", path.name, good)
            os.truncate(path, good)
        return start + good

    def replay(self, since: int) -> Iterator[tuple[int, int, Entry]]:
        """Every durable entry from offset ``since`` on, as ``(start, end, entry)``."""
        for start, end, payload in self.replay_raw(since):
            yield start, end, _DECODER.decode(payload)

    def replay_raw(self, since: int) -> Iterator[tuple[int, int, bytes]]:
        """:meth:`replay`, each entry as its payload (:func:`decode_payload`)."""
        segments = self._segments()
        for i, (start, path) in enumerate(segments):
            end = segments[i + 1][0] if i + 1 < len(segments) else None
            if end is not None and end <= since:
                continue
            yield from _frames(path, start, max(since - start, 0))

    def trim(self, position: int) -> None:
        """Delete the segments wholly before ``position`` (the store holds them)."""
        segments = self._segments()
        for (_, path), (next_start, _) in itertools.pairwise(segments):
            if next_start <= position:
                path.unlink(missing_ok=True)

    # -- the checkpoint --------------------------------------------------------
    def read_checkpoint(self) -> Checkpoint:
        """The last checkpoint written (a fresh spool's is offset 0)."""
        path = self.dir / "checkpoint.json"
        try:
            return msgspec.json.decode(path.read_bytes(), type=Checkpoint)
        except FileNotFoundError:
            return Checkpoint()

    def write_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Replace the checkpoint atomically (written, fsynced, renamed)."""
        path = self.dir / "checkpoint.json"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as out:
            out.write(msgspec.json.encode(checkpoint))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        _fsync_dir(self.dir)


def _frames(path: Path, start: int, offset: int) -> Iterator[tuple[int, int, bytes]]:
    """The whole, intact frames of one segment from ``offset`` on."""
    with open(path, "rb") as stream:
        stream.seek(offset)
        at = offset
        while True:
            header = stream.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return
            magic, size, crc = _HEADER.unpack(header)
            payload = stream.read(size)
            if magic != _MAGIC or len(payload) < size or zlib.crc32(payload) != crc:
                return
            try:
                _DECODER.decode(payload)  # a frame that checks out but does not decode ends it
            except msgspec.DecodeError:
                return
            end = at + _HEADER.size + size
            yield start + at, start + end, payload
            at = end


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
