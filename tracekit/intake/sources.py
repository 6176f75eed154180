"""Where traces are read from: one opener for every command.

Paths, ``-`` (standard input), FIFOs and process substitutions (read once,
so spooled to a temporary file), gzip (told by its magic bytes, not its
name), directories (their ``*.jsonl``, ``*.jsonl.gz`` and ``*.json`` files)
and globs become :class:`Source` objects in a stable order; a device is
refused (``/dev/zero`` would be read forever). ``tracekit tree`` reads one
source as a stream (:func:`open_path`), ``tracekit ingest`` many, each from
its resume offset (:func:`open_stream`, then the store's chunk reader).

Example:
    >>> [s.label for s in expand(["sample_traces/agent_orchestrator.jsonl"])]
    ['sample_traces/agent_orchestrator.jsonl']
"""

from __future__ import annotations

import glob
import gzip
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tracekit.errors import TraceFileError

__all__ = ["Source", "expand", "open_path", "open_stream", "refuse_device"]

_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
_GLOB_CHARS = frozenset("*?[")


def refuse_device(mode: int, label: str) -> None:
    """Raise if a file mode is a device's: it would be read forever.

    Raises:
        TraceFileError: the path is a character or block device.
    """
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise TraceFileError(label, "is a device, not a trace file")


def open_path(path: str) -> IO[bytes]:
    """Open one path for a single pass (a file, a pipe, a FIFO); ``-`` is not a path here.

    Raises:
        TraceFileError: missing, a directory, a device, or unreadable.
    """
    try:
        raw = open(path, "rb")  # noqa: SIM115 - the caller closes it
    except IsADirectoryError:
        raise TraceFileError(path, "is a directory, not a trace file") from None
    except FileNotFoundError:
        raise TraceFileError(path, "no such file") from None
    except OSError as exc:
        raise TraceFileError(path, f"cannot read ({exc.strerror or exc})") from None
    try:
        refuse_device(os.fstat(raw.fileno()).st_mode, path)
    except TraceFileError:
        raw.close()
        raise
    return raw


@dataclass
class Source:
    """One input: ``label`` as the user gave it, ``path`` the file to read."""

    label: str
    path: Path
    gz: bool
    stdin: bool = False

    @property
    def key(self) -> str | None:
        """The identity of the file across ingests (None for stdin)."""
        return None if self.stdin else str(self.path.resolve())


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[Source]:
    """Turn files, directories, globs and ``-`` into sources, in a stable order.

    Raises:
        TraceFileError: a path is missing or a glob or directory matches nothing.
    """
    sources: list[Source] = []
    for given in paths:
        text = os.fspath(given)
        if text == "-":
            sources.append(_stdin_source())
        elif os.path.isdir(text):
            sources.extend(_source(p, str(p)) for p in _walk(Path(text)))
        elif os.path.exists(text):
            sources.append(_source(Path(text), text))
        elif _GLOB_CHARS & set(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise TraceFileError(text, "no file matches this pattern")
            sources.extend(_source(Path(m), m) for m in matches if os.path.isfile(m))
        else:
            raise TraceFileError(text, "no such file or directory")
    return sources


def _walk(root: Path) -> list[Path]:
    found = [p for p in root.rglob("*") if p.is_file() and p.name.endswith(_SUFFIXES)]
    if not found:
        raise TraceFileError(str(root), "no *.jsonl, *.jsonl.gz or *.json file in this directory")
    return sorted(found)


def _source(path: Path, label: str) -> Source:
    try:
        mode = path.stat().st_mode
        refuse_device(mode, label)
        if not stat.S_ISREG(mode):  # a pipe, a FIFO, <(...): it can be read once only
            with path.open("rb") as stream:
                return _spooled(stream, label)
        with path.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise TraceFileError(label, f"cannot read ({exc.strerror or exc})") from None
    return Source(label=label, path=path, gz=gz)


def _stdin_source() -> Source:
    return _spooled(sys.stdin.buffer, "-")


def _spooled(stream: IO[bytes], label: str) -> Source:
    """Copy a stream to a temporary file, read in chunks like any file and then removed."""
    fd, name = tempfile.mkstemp(prefix="tracekit-stdin-", suffix=".jsonl")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(stream, out, 1 << 20)
    path = Path(name)
    with path.open("rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    return Source(label=label, path=path, gz=gz, stdin=True)


def open_stream(source: Source) -> IO[bytes]:
    """Open a source for reading bytes (gzip decompressed on the fly)."""
    if source.gz:
        return gzip.open(source.path, "rb")  # type: ignore[return-value]
    return source.path.open("rb")
