"""Many collectors, one run each: send every trace to one collector, chosen by its trace id.

A run's records and spans must all reach the same collector: a collector
builds a run's tree from what it holds, and a run whose spans were spread
over two collectors would be two halves in the lake. So whoever spreads the
load routes by trace id, as the OpenTelemetry Collector's load-balancing
exporter does (``routing_key: traceID``): :class:`TraceRouter` is the same
for tracekit's own clients. Rendezvous hashing picks the collector: every
client agrees without talking to the others, and removing a collector moves
only the traces it had.

Example:
    >>> router = TraceRouter(["http://a:4318", "http://b:4318", "http://c:4318"])
    >>> router.pick("5dfbd3d12c4a3698aa2ca1af6a107b75") == router.pick("5dfbd3d12c4a3698aa2ca1af6a107b75")
    True
    >>> lines = [b'{"type":"run.start","traceId":"t1","runId":"r1"}', b'{"type":"run.end","traceId":"t1"}']
    >>> len(router.split_records(lines))
    1
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Final

from tracekit.errors import TracekitError

__all__ = ["TraceRouter"]

_TIMEOUT: Final = 60.0


class TraceRouter:
    """Routes records and OTLP spans to collectors by trace id.

    Args:
        endpoints: the collectors' base URLs (``http://HOST:4318``).
        token: a bearer token the collectors require, if any.
    """

    def __init__(self, endpoints: Sequence[str], *, token: str | None = None) -> None:
        if not endpoints:
            raise TracekitError("a router needs at least one collector")
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self.token = token

    def pick(self, trace_id: str) -> str:
        """The collector of a trace: the highest rendezvous score of trace id and endpoint."""
        return max(self.endpoints, key=lambda e: _score(trace_id, e))

    def split_records(self, lines: Iterable[bytes]) -> dict[str, list[bytes]]:
        """tracekit records (JSON lines) by collector; a record without ``traceId`` by its ``runId``."""
        out: dict[str, list[bytes]] = defaultdict(list)
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = str(record.get("traceId") or record.get("runId") or "")
            except (ValueError, AttributeError):
                key = ""  # the collector that gets it reports it, with its line
            out[self.pick(key)].append(line)
        return dict(out)

    def split_otlp(self, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """An OTLP/JSON ``ExportTraceServiceRequest`` as one request per collector."""
        out: dict[str, dict[str, Any]] = {}
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                parts: dict[str, list[Any]] = defaultdict(list)
                for span in scope.get("spans", []):
                    parts[self.pick(str(span.get("traceId", "")))].append(span)
                for endpoint, spans in parts.items():
                    request = out.setdefault(endpoint, {"resourceSpans": []})
                    request["resourceSpans"].append(
                        {**resource, "scopeSpans": [{**scope, "spans": spans}]}
                    )
        return out

    def send_records(self, lines: Iterable[bytes]) -> dict[str, int]:
        """POST the records to their collectors (``/v1/records``); lines sent to each."""
        sent = {}
        for endpoint, part in self.split_records(lines).items():
            self._post(f"{endpoint}/v1/records", b"\n".join(part) + b"\n", "application/x-ndjson")
            sent[endpoint] = len(part)
        return sent

    def send_otlp(self, document: dict[str, Any]) -> dict[str, int]:
        """POST the spans to their collectors (``/v1/traces``, OTLP/JSON); spans sent to each."""
        sent = {}
        for endpoint, request in self.split_otlp(document).items():
            self._post(f"{endpoint}/v1/traces", json.dumps(request).encode(), "application/json")
            sent[endpoint] = sum(
                len(s["spans"]) for r in request["resourceSpans"] for s in r["scopeSpans"]
            )
        return sent

    def _post(self, url: str, body: bytes, kind: str) -> None:
        headers = {"Content-Type": kind}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT) as answer:
                answer.read()
        except (urllib.error.URLError, OSError) as exc:
            raise TracekitError(f"{url}: cannot send ({getattr(exc, 'reason', exc)})") from None


def _score(key: str, endpoint: str) -> bytes:
    return hashlib.blake2b(f"{key}\x00{endpoint}".encode(), digest_size=8).digest()
