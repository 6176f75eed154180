"""``GET /metrics``: the server and its store in the Prometheus text format (docs/serve.md).

Two kinds of numbers, and a type for each:

- **What this process counted since it started** (spans received, rejected at
  the request and stored, batches, loads, busy answers): counters, ``*_total``.
  They only grow; a restart starts them at 0 again, which ``rate()`` and
  ``increase()`` take as a counter reset.
- **What the store holds now** (runs by service and outcome, incomplete runs,
  runs by recursion circle, the cost of the loops): gauges. They are read from
  a store, not counted as events happen: a store replaced, an ingest undone or
  the runs classified again (a rule changed) may lower them, which a counter
  must never do. ``delta()`` over a window gives what arrived in it. The spool
  backlog is a gauge too.

The store's numbers come from three reads (:func:`tracekit.store.gauges.store_gauges`),
kept until the loader stores its next batch and for at most a minute (the
running and crashed runs age with the clock), and never read twice within
:data:`MIN_AGE_S`: a scrape every 15 s of an idle store costs no query. A
store that refuses writes (a full disk) is not readable; the last numbers read
are sent then, with ``tracekit_store_writable 0``. docs/serve.md shows a
scrape, a Prometheus scrape config and an alert rule.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tracekit.server.collector import Collector
from tracekit.server.exposition import CONTENT_TYPE, Family, render
from tracekit.server.reads import per_request
from tracekit.store import Store
from tracekit.store.gauges import StoreGauges, store_gauges

__all__ = ["MAX_AGE_S", "MIN_AGE_S", "TOP_NAMES", "metrics_families", "metrics_route"]

#: Services and circles named in the labels; the rest are summed as ``other``.
TOP_NAMES: Final = 20
#: The store's numbers are read again at most this often, however often scraped.
MIN_AGE_S: Final = 5.0
#: ... and at least this often, even if nothing was stored (runs age into ``crashed``).
MAX_AGE_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class _Reading:
    key: tuple[int, int]  # the loader and its loads: changes when a batch is stored
    at: float  # time.monotonic() when read
    gauges: StoreGauges


class _Cache:
    """The last reading of the store, shared by every scrape."""

    def __init__(self) -> None:
        self.reading: _Reading | None = None
        self.lock = threading.Lock()

    def fresh(self, key: tuple[int, int], now: float) -> StoreGauges | None:
        found = self.reading
        if found is None:
            return None
        age = now - found.at
        if age < MIN_AGE_S or (found.key == key and age < MAX_AGE_S):
            return found.gauges
        return None


def _key(collector: Collector) -> tuple[int, int]:
    loader = collector.loader  # replaced when the store is reopened
    return id(loader), loader.loads


def _cache(request: Request) -> _Cache:
    state = request.app.state
    found: _Cache | None = getattr(state, "metrics_cache", None)
    if found is None:
        state.metrics_cache = found = _Cache()
    return found


def _reply(collector: Collector, cache: _Cache) -> Response:
    reading = cache.reading
    text = render(metrics_families(collector, reading.gauges if reading else None, _age(cache)))
    return Response(text.encode("utf-8", "replace"), media_type=CONTENT_TYPE)


def _age(cache: _Cache) -> float | None:
    reading = cache.reading
    return None if reading is None else time.monotonic() - reading.at


def _read(request: Request) -> Callable[[Store], Response]:
    collector: Collector = request.app.state.collector
    cache = _cache(request)

    def work(store: Store) -> Response:
        key = _key(collector)
        with cache.lock:  # two scrapes at once: the second takes the first's reading
            if cache.fresh(key, time.monotonic()) is None:
                gauges = store_gauges(store.con, top=TOP_NAMES)
                cache.reading = _Reading(key, time.monotonic(), gauges)
        return _reply(collector, cache)

    return work


async def _metrics(request: Request) -> Response:
    collector: Collector = request.app.state.collector
    cache = _cache(request)
    if collector.failed or cache.fresh(_key(collector), time.monotonic()) is not None:
        return _reply(collector, cache)  # no read: the numbers held (or none)
    return await per_request(_read)(request)


def metrics_route() -> Route:
    """The ``/metrics`` route, for :func:`tracekit.server.app.create_app`'s extra routes."""
    return Route("/metrics", _metrics, methods=["GET"])


def metrics_families(
    collector: Collector, gauges: StoreGauges | None, age: float | None = None
) -> list[Family]:
    """Every family ``/metrics`` sends: the process's counters, then the store's gauges.

    Args:
        collector: the server's collector (its counters and backlog).
        gauges: the store's numbers, or None before the first reading.
        age: seconds since ``gauges`` were read.
    """
    families = _ingest(collector)
    if gauges is not None:
        families += _store(gauges)
        families.append(
            Family(
                "tracekit_store_reading_age_seconds",
                "gauge",
                "Seconds since the store's numbers here were read.",
                [({}, round(age or 0.0, 3))],
            )
        )
    return families


def _ingest(collector: Collector) -> list[Family]:
    sources = sorted(collector.source_counts().items())
    loader = collector.loader

    def per_source(field: str) -> list[tuple[dict[str, str], float]]:
        return [({"source": name}, getattr(stats, field)) for name, stats in sources]

    return [
        Family(
            "tracekit_ingest_spans_received_total",
            "counter",
            "Spans (or v1 lines) received since the server started, kept or not.",
            per_source("received"),
        ),
        Family(
            "tracekit_ingest_spans_rejected_total",
            "counter",
            "Spans (or v1 lines) refused at the request (bad ids, limits); kept in rejects.",
            per_source("refused"),
        ),
        Family(
            "tracekit_ingest_batches_total",
            "counter",
            "Requests (or gRPC calls) whose spans reached the spool.",
            per_source("batches"),
        ),
        Family(
            "tracekit_ingest_spans_stored_total",
            "counter",
            "Spans fed, mapped and committed to the store since the server started.",
            [({}, loader.spans_loaded)],
        ),
        Family(
            "tracekit_ingest_loads_total",
            "counter",
            "Loads committed to the store (each derives and classifies what it stored).",
            [({}, loader.loads)],
        ),
        Family(
            "tracekit_ingest_busy_answers_total",
            "counter",
            "Requests answered 429 or 503 (overload: the client retries; nothing dropped).",
            [({}, collector.busy_answers)],
        ),
        *_backlog(collector),
    ]


def _backlog(collector: Collector) -> list[Family]:
    loader = collector.loader
    return [
        Family(
            "tracekit_spool_backlog_bytes",
            "gauge",
            "Bytes acknowledged to clients but not yet taken by the loader.",
            [({}, collector.spool.backlog())],
        ),
        Family(
            "tracekit_spool_backlog_batches",
            "gauge",
            "Spooled batches not yet taken by the loader.",
            [({}, loader.queued)],
        ),
        Family(
            "tracekit_ingest_pending_spans",
            "gauge",
            "Spans held by the mapping, waiting for the rest of their trace.",
            [({}, loader.pending_spans)],
        ),
        Family(
            "tracekit_store_writable",
            "gauge",
            "1 while the store takes writes; 0 while it refuses them (a full disk).",
            [({}, 0 if collector.failed else 1)],
        ),
    ]


def _store(gauges: StoreGauges) -> list[Family]:
    return [
        Family(
            "tracekit_runs",
            "gauge",
            "Root runs in the store by service and outcome (the top"
            f" {TOP_NAMES} services by runs named, the rest as other).",
            [({"service": s, "outcome": o}, n) for s, o, n in gauges.runs],
        ),
        Family(
            "tracekit_incomplete_runs",
            "gauge",
            "Incomplete runs: crashed (quiet for 15 minutes) or still running.",
            [({"state": k}, v) for k, v in sorted(gauges.incomplete.items())],
        ),
        Family(
            "tracekit_recursion_circle_runs",
            "gauge",
            "Runs with a recursion circle by circle and outcome (the top"
            f" {TOP_NAMES} circles by runs named, the rest as other).",
            [({"circle": c, "outcome": o}, n) for c, o, n in gauges.circles],
        ),
        *_loops(gauges),
    ]


_LOOP_FIELDS: Final[tuple[tuple[str, str, str], ...]] = (
    ("tracekit_loop_runs", "runs", "Runs whose agents went round the circle"),
    ("tracekit_loop_revisits", "revisits", "Revisits of the circle's agents"),
    ("tracekit_loop_invocations", "invocations", "Agent invocations inside the circle"),
    ("tracekit_loop_model_calls", "model_calls", "Model calls inside the circle"),
)
_BY_LOOP: Final = (
    ", by circle and how the loop stopped (limit, silent, refused, finished); the top"
    f" {TOP_NAMES} circles by tokens named, the rest as other."
)


def _loops(gauges: StoreGauges) -> list[Family]:
    def samples(get: Callable[[Any], float]) -> list[tuple[dict[str, str], float]]:
        return [({"circle": c.circle, "stopped": c.stopped}, get(c)) for c in gauges.loops]

    families = [
        Family(name, "gauge", what + _BY_LOOP, samples(attrgetter(attr)))
        for name, attr, what in _LOOP_FIELDS
    ]
    tokens: list[tuple[dict[str, str], float]] = []
    for c in gauges.loops:
        labels = {"circle": c.circle, "stopped": c.stopped}
        tokens.append(({**labels, "direction": "input"}, c.input_tokens))
        tokens.append(({**labels, "direction": "output"}, c.output_tokens))
    families.append(
        Family(
            "tracekit_loop_tokens",
            "gauge",
            "Model tokens spent inside the circle" + _BY_LOOP,
            tokens,
        )
    )
    families.append(
        Family(
            "tracekit_loop_duration_seconds",
            "gauge",
            "Time spent inside the circle" + _BY_LOOP,
            samples(lambda c: round(c.duration_ms / 1000.0, 6)),
        )
    )
    return families
