"""The append-only spool: every accepted batch is on disk (fsynced) before it is acknowledged.

Batches are framed (length, span count, CRC-32s, msgpack) and appended to segment files
named by the global offset they start at. One writer thread owns the file:
requests hand it their frames and wait; it writes whatever has queued up,
fsyncs once, and wakes them all (group commit: concurrent requests share one
fsync). The loader records how far the store holds what the spool has
(:class:`Checkpoint`); after a crash the spool is replayed from there, and a
torn frame at the end (never acknowledged: its fsync never returned) is cut off.
A damaged frame elsewhere (a flipped byte) is skipped, and the spans it held
(its header says how many, under a checksum of its own) are named in a message
and counted (:attr:`Spool.damaged_spans`); the frames after it are read on.
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

__all__ = [
    "Checkpoint",
    "Entry",
    "Spool",
    "SpoolFullError",
    "decode_payload",
    "encode_payload",
    "frame_header",
]

log = logging.getLogger("tracekit.server")

_MAGIC_V1: Final = b"TKS1"
_HEADER_V1: Final = struct.Struct("<4sII")  # magic, payload length, crc32 of payload
_MAGIC: Final = b"TKS2"
#: magic, payload length, spans (or lines) in it, crc32 of the payload, crc32 of the 16 bytes before
_HEADER: Final = struct.Struct("<4sIIII")
_COUNTED: Final = struct.Struct("<4sIII")
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
        self.damaged_spans = 0  # spans in damaged frames skipped (named in the log)
        self._reported: set[tuple[str, int]] = set()
        self.position = self._repair()
        self._file: io.BufferedWriter | None = self._open_segment()
        #: Why the spool cannot be written now (a full disk, its directory gone), or None.
        self.failed: str | None = None
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
        return self._queue_all([(payload, items, entry)])[0]

    def append_payloads(self, payloads: list[tuple[bytes, int]]) -> list[Future[int]]:
        """:meth:`append_payload` of several entries (the slices of one body): all, or none.

        Raises:
            SpoolFullError: the backlog is over the limit (nothing was queued).
        """
        return self._queue_all([(payload, items, None) for payload, items in payloads])

    def _queue_all(self, entries: list[tuple[bytes, int, Entry | None]]) -> list[Future[int]]:
        pending = [
            _Pending(frame_header(payload, items), payload, entry, items, Future())
            for payload, items, entry in entries
        ]
        size = sum(p.size for p in pending)
        with self._cond:
            if self._stopping:
                raise SpoolFullError("the server is stopping")
            if self.backlog() + size > self.limit and self.backlog() > 0:
                raise SpoolFullError(
                    f"the spool holds {self.backlog()} bytes not yet loaded (limit {self.limit})"
                )
            self._queue.extend(pending)
            self._queued_bytes += size
            self._cond.notify()
        return [p.future for p in pending]

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                batch, self._queue = self._queue, []
                if not batch and self._stopping:
                    return
            clock = time.thread_time()
            before = -1
            try:
                self._file = self._writable()
                before = self._file.tell()
                self._write(batch)
                self.failed = None
            except (
                OSError
            ) as exc:  # a full disk, a spool directory gone: refuse these, keep serving
                self._refuse(batch, exc, before)
            self.cpu += time.thread_time() - clock

    def _writable(self) -> io.BufferedWriter:
        """The segment to append to: the open one, a new one past the size, or one opened anew."""
        if self._file is not None and (
            self._file.tell() >= _SEGMENT_BYTES
            # Removed under us (the directory deleted): a write there would be lost.
            or os.fstat(self._file.fileno()).st_nlink == 0
        ):
            self._file.close()
            self._file = None
        return self._file or self._open_segment()

    def _refuse(self, batch: list[_Pending], exc: OSError, before: int) -> None:
        reason = f"cannot write the spool in {self.dir} ({exc.strerror or exc})"
        if reason != self.failed:  # said once, not once a request
            log.error("%s; requests get 503 until it can", reason)
        self.failed = reason
        if before >= 0:
            self._rewind(before)
        with self._cond:
            self._queued_bytes -= sum(p.size for p in batch)
        for pending in batch:
            pending.future.set_exception(SpoolFullError(reason))

    def _rewind(self, size: int) -> None:
        """Cut off what a failed write left of its frames, so the next frame follows a whole one."""
        assert self._file is not None
        path = self._file.name
        with contextlib.suppress(OSError):
            self._file.close()  # its flush may fail again; the file is closed all the same
        self._file = None  # opened again by the next write
        try:
            os.truncate(path, size)
        except OSError as exc:
            log.error("cannot cut the spool back to %d bytes: %s", size, exc)

    def _write(self, batch: list[_Pending]) -> None:
        assert self._file is not None
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
        if self._file is not None:
            with contextlib.suppress(OSError):
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
        for _, end, _payload in self._frames(path, start, 0):
            good = end - start
        if good < path.stat().st_size:
            # Past the last whole frame: a frame whose write never finished (never
            # acknowledged), or damage at the very end (named by _frames).
            log.warning(
                "spool %s: cut %d bytes after the last whole frame (byte %d)",
                path.name,
                path.stat().st_size - good,
                good,
            )
            os.truncate(path, good)
        return start + good

    def _frames(self, path: Path, start: int, offset: int) -> Iterator[tuple[int, int, bytes]]:
        """The intact frames of a segment; each damaged one named once in the log and counted."""
        for found in _frames(path, start, offset):
            if isinstance(found, _Damage):
                self._report(path, found)
            else:
                yield found

    def _report(self, path: Path, damage: _Damage) -> None:
        if (path.name, damage.at) in self._reported:
            return
        self._reported.add((path.name, damage.at))
        if damage.items is None:
            what = "an unknown number of spans (its header is damaged too)"
        else:
            self.damaged_spans += damage.items
            what = f"{damage.items} acknowledged span{'s' if damage.items != 1 else ''}"
        log.error(
            "spool %s: skipped %d damaged bytes at byte %d, which held %s: lost",
            path.name,
            damage.size,
            damage.at,
            what,
        )

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
            yield from self._frames(path, start, max(since - start, 0))

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


def frame_header(payload: bytes, items: int) -> bytes:
    """The header of a frame: its length and span count, checksummed apart from the payload.

    Example:
        >>> len(frame_header(b"abc", 1))
        20
    """
    counted = _COUNTED.pack(_MAGIC, len(payload), items, zlib.crc32(payload))
    return counted + struct.pack("<I", zlib.crc32(counted))


@dataclass(frozen=True)
class _Damage:
    at: int  # offset in the segment
    size: int  # bytes skipped
    items: int | None  # spans they held, when the header says (None: unknown)


def _frames(path: Path, start: int, offset: int) -> Iterator[tuple[int, int, bytes] | _Damage]:
    """The frames of one segment from ``offset`` on, and the damaged stretches between them.

    A frame cut short at the end of the file is its end (a write that never
    finished); damage elsewhere is skipped up to the next frame whose header
    checks out.
    """
    data = path.read_bytes()
    at = offset
    while at < len(data):
        frame = _frame_at(data, at)
        if frame is None:  # a torn end: nothing whole after it
            return
        if isinstance(frame, int):  # a whole frame
            yield start + at, start + frame, data[at + _header_size(data, at) : frame]
            at = frame
            continue
        following = _next_frame(data, at + 1)
        if following is None and frame.items is None:
            return  # garbage at the end, no frame after it: a torn write
        end = len(data) if following is None else following
        yield _Damage(at, end - at, frame.items)
        at = end


def _header_size(data: bytes, at: int) -> int:
    return _HEADER_V1.size if data[at : at + 4] == _MAGIC_V1 else _HEADER.size


def _frame_at(data: bytes, at: int) -> int | _Damage | None:
    """The end of the whole frame at ``at``; a :class:`_Damage` if it is damaged; None if torn."""
    magic = data[at : at + 4]
    if magic == _MAGIC_V1:  # a spool written before frames carried their span count
        if at + _HEADER_V1.size > len(data):
            return None
        _, size, crc = _HEADER_V1.unpack_from(data, at)
        end = at + _HEADER_V1.size + size
        if end > len(data):
            return None
        return end if _decodes(data[at + _HEADER_V1.size : end], crc) else _Damage(at, 0, None)
    if at + _HEADER.size > len(data):
        return None
    _, size, items, crc, header_crc = _HEADER.unpack_from(data, at)
    if magic != _MAGIC or zlib.crc32(data[at : at + _COUNTED.size]) != header_crc:
        return _Damage(at, 0, None)
    end = at + _HEADER.size + size
    if end > len(data):
        return None  # its length checks out and runs past the end: a write that never finished
    return end if _decodes(data[at + _HEADER.size : end], crc) else _Damage(at, 0, items)


def _decodes(payload: bytes, crc: int) -> bool:
    if zlib.crc32(payload) != crc:
        return False
    try:
        _DECODER.decode(payload)  # a frame that checks out but does not decode is damaged
    except msgspec.DecodeError:
        return False
    return True


def _next_frame(data: bytes, at: int) -> int | None:
    """Where the next frame whose header checks out starts, from ``at`` on."""
    while True:
        at = data.find(_MAGIC, at)
        if at < 0 or at + _HEADER.size > len(data):
            return None
        counted = data[at : at + _COUNTED.size]
        if zlib.crc32(counted) == struct.unpack_from("<I", data, at + _COUNTED.size)[0]:
            return at
        at += 1


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
