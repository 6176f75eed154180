"""The HTTP/1.1 connection: uvicorn's, with a deadline on the request line and headers.

uvicorn closes an idle keep-alive connection, but a new connection that
sends its headers a byte at a time is kept for as long as it likes. Here
each request's headers must be complete within ``header_timeout`` seconds
of the connection opening (or of the previous response), else the
connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["protocol_class"]

log = logging.getLogger("tracekit.server")


def protocol_class(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header deadline of ``header_timeout`` seconds."""

    class Protocol(H11Protocol):
        """One connection; closed if a request's headers are not in within the deadline."""

        _deadline: asyncio.TimerHandle | None = None
        _armed_for: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

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
