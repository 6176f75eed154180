"""Reading a request body: bounded in size, in time, and in memory over all requests.

A client that sends its headers and then drips the body must not hold
anything others need: the body is read before a request takes an ingest
slot, each piece must come within ``idle`` seconds and the whole within
``total``, and the bytes held by bodies, from their first byte until their
request is answered, are capped over every request together (a slow client
costs what it has sent, not a slot; bodies waiting for the decoding process
count too, so several big requests at once stay within the memory cap). A
``Content-Length`` far over the limit is refused before a byte is read.

Example:
    >>> budget = BodyBudget(1 << 20)
    >>> budget.take(600 << 10), budget.take(600 << 10)
    (True, False)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

from starlette.requests import ClientDisconnect, Request

from tracekit.server.decode import TooLargeError

__all__ = [
    "BodyBudget",
    "BodyLimits",
    "BudgetError",
    "ClientGoneError",
    "SlowBodyError",
    "read_body",
]

#: Past the limit, the rest is read and dropped up to this much, so that a
#: client still sending gets its 413 instead of a reset connection.
_DRAIN: Final = 64 << 20


class SlowBodyError(Exception):
    """The body did not arrive in time: 408."""


class ClientGoneError(Exception):
    """The client closed the connection before its body was read."""


class BodyBudget:
    """Bytes held by bodies being read, over every request; past the cap a request gets 429."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes, if the cap allows (the event loop's thread only)."""
        if self.held + size > self.cap:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        """Release bytes taken."""
        self.held -= size


@dataclass(frozen=True)
class BodyLimits:
    """How much and how long a body may take."""

    size: int
    idle: float
    total: float


class BudgetError(Exception):
    """The bodies being read already hold as much memory as they may: 429."""


async def read_body(request: Request, limits: BodyLimits, budget: BodyBudget) -> bytes:
    """The body, at most ``limits.size`` bytes, each piece within ``idle`` s, all within ``total``.

    The body's bytes stay taken from ``budget`` once it is read: the caller
    gives them back (``budget.give(len(body))``) once the request is answered,
    so that bodies waiting to be decoded count as much as those arriving.

    Raises:
        TooLargeError: the declared or actual length is over the limit (413).
        SlowBodyError: a piece or the whole came too late (408).
        BudgetError: bodies being read hold too much memory already (429).
        ClientGoneError: the client went away mid-body.
    """
    declared = request.headers.get("content-length", "")
    # Far over the limit: refused at once (a body a little over it is read and
    # dropped, so that a client still sending gets the 413, not a reset).
    if declared.isdigit() and int(declared) > limits.size + _DRAIN:
        raise TooLargeError(f"the body is over {limits.size} bytes (Content-Length {declared})")
    parts: list[bytes] = []
    size = 0
    kept = False
    try:
        async with asyncio.timeout(limits.total):
            async for piece in _pieces(request, limits.idle):
                size += len(piece)
                if size > limits.size + _DRAIN:
                    break
                if size <= limits.size:
                    if not budget.take(len(piece)):
                        raise BudgetError("too many request bodies are being received at once")
                    parts.append(piece)
    except TimeoutError:
        raise SlowBodyError(f"the body did not arrive within {limits.total:g} s") from None
    except ClientDisconnect:
        raise ClientGoneError("the client closed the connection mid-body") from None
    else:
        kept = size <= limits.size
    finally:
        if not kept:
            budget.give(sum(len(p) for p in parts))
    if not kept:
        raise TooLargeError(f"the body is over {limits.size} bytes")
    return b"".join(parts)


async def _pieces(request: Request, idle: float) -> AsyncIterator[bytes]:
    stream = request.stream().__aiter__()
    while True:
        try:
            piece = await asyncio.wait_for(stream.__anext__(), idle)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise SlowBodyError(f"no byte of the body came for {idle:g} s") from None
        yield piece
