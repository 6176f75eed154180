"""``HttpSink``: records sent to a ``tracekit serve`` in batches, never in the agent's way.

Records are buffered (a bounded buffer: past ``max_buffer`` the oldest are
dropped and counted) and a background thread posts them as v1 JSON lines to
``POST /v1/records``. A send that fails is logged once and tried again later;
the agent never waits for the server and never sees its errors.

Example:
    >>> from tracekit.events import Node
    >>> sink = HttpSink("http://127.0.0.1:9", timeout=0.2)  # nothing listens there
    >>> sink.emit(Node(ts=1.0, runId="r", id="decide"))
    >>> sink.close()  # the send fails: logged once, the agent carries on
    >>> sink.dropped
    1
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from typing import Final

import msgspec

from tracekit._util.text import plural
from tracekit.events import Event

__all__ = ["HttpSink"]

log = logging.getLogger("tracekit.sdk")
_ENCODER: Final = msgspec.json.Encoder()
_RETRYABLE: Final = frozenset({429, 502, 503, 504})


class HttpSink:
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
        self._headers = {"Content-Type": "application/x-ndjson"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._batch = batch
        self._interval = interval
        self._timeout = timeout
        self._buffer: deque[bytes] = deque()
        self._max = max_buffer
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._warned = False
        self.dropped = 0  # records given up on (buffer full, refused, or unsent at close)
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="tracekit-http-sink", daemon=True)
        self._thread.start()

    def emit(self, event: Event) -> None:
        """Buffer one record (never blocks on the network, never raises for it)."""
        line = _ENCODER.encode(event)
        with self._lock:
            if self._closed:
                self.dropped += 1
                return
            if len(self._buffer) >= self._max:
                self._buffer.popleft()
                self.dropped += 1
                self._warn("buffer full, dropping the oldest records")
            self._buffer.append(line)
            full = len(self._buffer) >= self._batch
        if full:
            self._wake.set()

    def flush(self) -> None:
        """Try to send everything buffered now; what fails stays buffered."""
        while self._send_one():
            pass

    def close(self) -> None:
        """Send what is buffered (one try), stop the thread; what is left is counted dropped."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake.set()
        self._thread.join(self._timeout + 1)
        self.flush()
        with self._lock:
            self.dropped += len(self._buffer)
            self._buffer.clear()
        if self.dropped:  # the one figure the agent's operator needs at the end
            log.warning(
                "tracekit HttpSink: %s not delivered to %s (%s sent)",
                plural(self.dropped, "record"),
                self.endpoint,
                self.sent,
            )

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self._interval)
            self._wake.clear()
            while not self._closed and self._send_one():
                pass

    def _send_one(self) -> bool:
        """Send one batch; True if it went (and more may wait)."""
        with self._send_lock:
            with self._lock:
                lines = [self._buffer.popleft() for _ in range(min(self._batch, len(self._buffer)))]
            if not lines:
                return False
            status = self._post(b"\n".join(lines) + b"\n")
            if status == 200:
                self.sent += len(lines)
                return True
            if status in _RETRYABLE or status == 0:
                with self._lock:  # back to the front, in order, still bounded
                    room = self._max - len(self._buffer)
                    kept = lines[-room:] if room < len(lines) else lines
                    self.dropped += len(lines) - len(kept)
                    self._buffer.extendleft(reversed(kept))
                time.sleep(0)  # let the next try wait for the interval
                return False
            self.dropped += len(lines)  # refused for good (400, 401, 413): sending again won't help
            return True

    def _post(self, body: bytes) -> int:
        request = urllib.request.Request(self.endpoint, body, self._headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as exc:
            self._warn(f"{self.endpoint} answered {exc.code}")
            return int(exc.code)
        except (OSError, ValueError) as exc:
            self._warn(f"cannot reach {self.endpoint} ({exc})")
            return 0

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("tracekit HttpSink: %s; carrying on (logged once)", message)
