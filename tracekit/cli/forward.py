"""``tracekit ingest`` on a store that ``tracekit serve`` holds: the lines go to the server.

The server takes v1 records at ``POST /v1/records`` and OTLP/JSON at
``POST /v1/traces``; each line is sent as what it is, in bodies of at most a
few MiB, and the server's own load accounts for them (``GET /api/ingest``,
``tracekit rejects``). A 429 or 503 is retried after the time it asks for.
"""

from __future__ import annotations

import gzip
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from tracekit.errors import TracekitError
from tracekit.store.sources import Source, expand

__all__ = ["Forwarded", "forward_files"]

_BODY: Final = 4 << 20
_TRIES: Final = 30
_OTLP: Final = b'{"resourceSpans"'


@dataclass
class Forwarded:
    """What was sent: v1 lines to ``/v1/records``, OTLP documents to ``/v1/traces``."""

    records: int = 0
    documents: int = 0


def forward_files(paths: list[str], url: str) -> Forwarded:
    """Send every line of ``paths`` to the server at ``url``; what was sent.

    Raises:
        TraceFileError: a path is missing.
        TracekitError: the server refused a body (it says why).
    """
    done = Forwarded()
    for source in expand(paths):
        records: list[bytes] = []
        size = 0
        for line in _lines(source):
            if line.lstrip().startswith(_OTLP):
                _post(url, "/v1/traces", line, "application/json")
                done.documents += 1
                continue
            records.append(line)
            size += len(line) + 1
            if size >= _BODY:
                done.records += _send_records(url, records)
                records, size = [], 0
        done.records += _send_records(url, records)
    return done


def _lines(source: Source) -> Iterator[bytes]:
    if source.stdin:
        import sys

        stream = sys.stdin.buffer
    else:
        stream = gzip.open(source.path, "rb") if source.gz else open(source.path, "rb")  # noqa: SIM115
    with stream:
        for line in stream:
            if line.strip():
                yield line.rstrip(b"\r\n")


def _send_records(url: str, lines: list[bytes]) -> int:
    if lines:
        _post(url, "/v1/records", b"\n".join(lines) + b"\n", "application/x-ndjson")
    return len(lines)


def _post(url: str, path: str, body: bytes, media: str) -> None:
    headers = {"Content-Type": media}
    token = os.environ.get("TRACEKIT_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    for _ in range(_TRIES):
        request = urllib.request.Request(url + path, body, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                answer.read()
                return
        except urllib.error.HTTPError as exc:
            if exc.code not in (429, 503):
                raise TracekitError(
                    f"{url}{path}: the server refused a body ({exc.code}: {exc.read()[:200]!r})"
                ) from None
            time.sleep(float(exc.headers.get("Retry-After") or 1))
        except OSError as exc:
            raise TracekitError(f"{url}: cannot reach the server ({exc})") from None
    raise TracekitError(f"{url}{path}: the server stayed busy", hint="Retry in a while.")
