"""The HTTP/1.1 connection: uvicorn's, with a deadline on the headers and framing by the book.

uvicorn closes an idle keep-alive connection, but a new connection that
sends its headers a byte at a time is kept for as long as it likes. Here
each request's headers must be complete within ``header_timeout`` seconds
of the connection opening (or of the previous response), else the
connection is closed.

A request with both ``Content-Length`` and ``Transfer-Encoding`` may be
framed one way by a proxy and the other way here (request smuggling): RFC
9112 section 6.1 says to treat it as an error and close the connection, and
so it gets a 400 and the connection is closed, its body never read.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["framing_error", "protocol_class"]

log = logging.getLogger("tracekit.server")


def protocol_class(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header deadline of ``header_timeout`` seconds."""

    class Protocol(H11Protocol):
        """One connection; closed if a request's headers are not in within the deadline."""

        _deadline: asyncio.TimerHandle | None = None
        _armed_for: Any = None

        _framing: str = ""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()
            self.conn.next_event = self._checked_event  # type: ignore[method-assign]

        def _checked_event(self) -> Any:
            event = h11.Connection.next_event(self.conn)
            if isinstance(event, h11.Request):
                reason = framing_error(event.headers)
                if reason:
                    self._framing = reason
                    raise h11.RemoteProtocolError(reason)
            return event

        def send_400_response(self, msg: str) -> None:
            super().send_400_response(self._framing or msg)

        def _arm(self) -> None:
            self._armed_for = self.cycle
            self._deadline = self.loop.call_later(header_timeout, self._late)

        def _late(self) -> None:
            if self.cycle is self._armed_for and not self.transport.is_closing():
                log.info("closed a connection whose headers took over %g s", header_timeout)
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._deadline is not None:
                self._deadline.cancel()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return Protocol


def framing_error(headers: Any) -> str:
    """Why a request's framing headers are refused (RFC 9112 section 6.1), or "".

    Example:
        >>> framing_error([(b"content-length", b"5"), (b"transfer-encoding", b"chunked")])
        'a request with both Content-Length and Transfer-Encoding is refused (RFC 9112 6.1)'
        >>> framing_error([(b"content-length", b"5")])
        ''
    """
    names = {bytes(name).lower() for name, _ in headers}
    if b"content-length" in names and b"transfer-encoding" in names:
        return "a request with both Content-Length and Transfer-Encoding is refused (RFC 9112 6.1)"
    return ""
