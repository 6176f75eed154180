"""``HttpSink``: records sent to a ``tracekit serve`` in batches, never in the agent's way.

A writer of one batch (a POST of v1 JSON lines to ``/v1/records``) behind a
:class:`~tracekit.sdk.batching.BatchingSink` with a background thread: records
are queued (bounded: past ``max_buffer`` the oldest are dropped and counted),
a send the server may get over (unreachable, 429, 502-504) is logged once and
tried again later, a refused one (400, 401, 413) is dropped and counted; at
close what was never delivered is counted and logged. The agent never waits
for the server and never sees its errors.

Example:
    >>> from tracekit.events import Node
    >>> sink = HttpSink("http://127.0.0.1:9", timeout=0.2)  # nothing listens there
    >>> sink.emit(Node(ts=1.0, runId="r", id="decide"))
    >>> sink.close()  # the send fails: logged once, the agent carries on
    >>> sink.dropped
    1
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Final

import msgspec

from tracekit.sdk.batching import BatchingSink, RetryLater

__all__ = ["HttpSink"]

_ENCODER: Final = msgspec.json.Encoder()
_RETRYABLE: Final = frozenset({429, 502, 503, 504})


class _HttpWriter:
    """Posts a batch as v1 JSON lines; a failure the server may get over is retried later."""

    def __init__(self, endpoint: str, token: str | None, timeout: float) -> None:
        self.target = endpoint
        self._headers = {"Content-Type": "application/x-ndjson"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout

    encode = staticmethod(_ENCODER.encode)

    def write(self, batch: list[bytes]) -> None:
        body = b"\n".join(batch) + b"\n"
        request = urllib.request.Request(self.target, body, self._headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout):
                return
        except urllib.error.HTTPError as exc:
            if exc.code in _RETRYABLE:
                raise RetryLater(f"{self.target} answered {exc.code}") from exc
            # Refused for good (400, 401, 413): sending it again won't help.
            raise _Refused(f"{self.target} answered {exc.code}") from exc
        except (OSError, ValueError) as exc:
            raise RetryLater(f"cannot reach {self.target} ({exc})") from exc

    def close(self) -> None:
        """Nothing held open between requests."""


class _Refused(Exception):
    """The server refused a batch for good."""


class HttpSink(BatchingSink):
    """A sink that posts records to ``{url}/v1/records``.

    Args:
        url: the server, e.g. ``http://127.0.0.1:4318`` (``tracekit serve``).
        token: sent as ``Authorization: Bearer TOKEN`` when given.
        batch: records per request.
        max_buffer: records held at most while the server cannot take them.
        interval: seconds between sends when fewer than ``batch`` are waiting.
        timeout: seconds a request may take.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        batch: int = 512,
        max_buffer: int = 100_000,
        interval: float = 1.0,
        timeout: float = 5.0,
    ) -> None:
        if batch < 1 or max_buffer < batch:
            raise ValueError("batch must be at least 1 and max_buffer at least batch")
        self.endpoint = url.rstrip("/") + "/v1/records"
        self.join_timeout = timeout + 1
        writer = _HttpWriter(self.endpoint, token, timeout)
        super().__init__(writer, batch=batch, max_queue=max_buffer, interval=interval)
