"""What ``tracekit serve`` is told: where the store is, where to listen, the limits."""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tracekit.errors import TracekitError

if TYPE_CHECKING:
    from tracekit.intake.otlp.dialect import Dialect

__all__ = [
    "ServeConfig",
    "ServeError",
    "is_loopback",
    "sidecar_path",
    "spool_dir",
    "store_id",
    "write_sidecar",
]


class ServeError(TracekitError):
    """The server cannot start as asked (an address without a token, a port taken)."""


@dataclass
class ServeConfig:
    """The server's settings; the defaults are those of ``tracekit serve``.

    Example:
        >>> ServeConfig(Path("fleet.duckdb")).port
        4318
    """

    db: Path
    host: str = "127.0.0.1"
    port: int = 4318
    grpc_port: int | None = None
    token: str | None = None
    #: Bytes a request body may have, compressed and again once inflated.
    max_body: int = 32 << 20
    #: Bytes acknowledged but not yet loaded before requests get 503.
    spool_limit: int = 64 << 20
    #: Requests decoding or waiting for the spool at once before more get 429.
    max_inflight: int = 64
    #: Seconds without a new span before a trace is derived from its stored spans.
    settle: float = 1.0
    #: The user's dialects (``--dialect FILE``) the traces are derived with.
    dialects: tuple[Dialect, ...] = ()
    #: Seconds to wait for the store when another process holds it.
    wait: float = 0.0
    #: Host names (besides loopback and ``host``) a request may name in ``Host``.
    allow_hosts: list[str] = field(default_factory=list)
    #: Seconds a connection may take to send its request line and headers.
    header_timeout: float = 10.0
    #: Seconds a body may go without a byte arriving (408 past it).
    body_idle: float = 5.0
    #: Seconds a whole body may take to arrive (408 past it).
    body_timeout: float = 60.0
    #: Bytes of request bodies held in memory at once (arriving, or waiting to be
    #: decoded and spooled), over every request (429 past it): four bodies of 32 MiB.
    body_budget: int = 128 << 20
    #: Seconds the decoding process may do no work while a request waits (then 503).
    decode_deadline: float = 10.0
    #: Read requests (``/api/...``, pages) answered at once before more get 429.
    max_reads: int = 8
    #: Seconds a read request may run before it is interrupted.
    read_timeout: float = 30.0
    #: Bytes an ``/api/sql`` reply may hold (rows past it are left, ``truncated``).
    max_reply: int = 64 << 20
    #: Resident bytes of the server past which running reads are stopped (503):
    #: DuckDB's limit (db_memory) plus a margin for Python, replies and bodies.
    memory_cap: int = 2 << 30
    #: DuckDB's memory limit on the served store (its buffer pool is most of the
    #: server's memory: with the decoding process and the queues, the server stays
    #: under 1 GB); a read that needs more spills to disk or is refused.
    db_memory: str = "400MB"

    def check(self) -> None:
        """Refuse an empty token, and an address other than loopback without a token.

        Raises:
            ServeError: a non-loopback host and no token, or an empty token.

        Example:
            >>> ServeConfig(Path("x.duckdb"), host="0.0.0.0").check()
            Traceback (most recent call last):
            ...
            tracekit.server.config.ServeError: refusing to listen on 0.0.0.0 without --token
        """
        if self.token is not None and (
            not self.token or not self.token.isprintable() or any(c.isspace() for c in self.token)
        ):
            raise ServeError(
                "refusing an empty token (or one with spaces or control characters)",
                hint="Set TRACEKIT_SERVE_TOKEN to a long random string (ps shows --token's value);"
                " leave it unset for no token.",
            )
        if not is_loopback(self.host) and not self.token:
            raise ServeError(
                f"refusing to listen on {self.host} without --token",
                hint="Give --token TOKEN (exporters send 'Authorization: Bearer TOKEN'),"
                " or listen on 127.0.0.1.",
            )


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def sidecar_path(db: Path) -> Path:
    """``<db>.server.json``: where a running server says where it listens.

    Example:
        >>> sidecar_path(Path("fleet.duckdb")).name
        'fleet.duckdb.server.json'
    """
    return db.with_name(db.name + ".server.json")


def store_id(db: Path) -> str:
    """A short fingerprint of the store's absolute path: what ``/healthz`` says it serves.

    Example:
        >>> store_id(Path("/data/fleet.duckdb")) == store_id(Path("/data/../data/fleet.duckdb"))
        True
    """
    import hashlib

    text = os.path.realpath(db)
    return hashlib.blake2s(text.encode(), digest_size=8).hexdigest()


def spool_dir(db: Path) -> Path:
    """``<db>.spool/``: the server's spool beside its store."""
    return db.with_name(db.name + ".spool")


def write_sidecar(db: Path, url: str, token_required: bool) -> None:
    """Write the sidecar (mode 0600: it tells where the store's server is)."""
    import json

    path = sidecar_path(db)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"url": url, "pid": os.getpid(), "token_required": token_required}, out)
    os.replace(tmp, path)
