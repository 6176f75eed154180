"""A seeded fleet of multi-agent runs, as v1 JSONL or OTLP JSON, with its ground truth.

:func:`simulate` writes runs of three simulated services (support, research,
data desks; seventeen agents) spread over a time window: delegation trees of
varied depth and width, handoffs, background subagents that overlap their
parent, child failures wrapped as ``AGENT_FAILED`` at each level, recursion
circles of two and three agents refused with ``AGENT_RECURSION``, refusals
(depth, allow-list, registry, input), failures handled by a caller (the run is
degraded), cancelled runs and crashed ones. The same arguments give the same
bytes; the v1 and OTLP outputs of one seed are the same fleet, and read back
as the same records. The truth file says what each run is, as the fleet
classification should find it (see ``docs/simulate.md``).

Example:
    >>> report = simulate("fleet.jsonl", runs=20, seed=7)
    >>> print(describe_report(report))
    wrote 20 runs, 473 events to fleet.jsonl (degraded 2, failed:child 1, failed:recursion 1, ok 16)
"""

from __future__ import annotations

import gzip
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Final, Literal

import msgspec

from tracekit._util.text import duration_ms
from tracekit.errors import TracekitError
from tracekit.events import Event, Exit, canonical_circle, parse_ts
from tracekit.simulation.catalog import SERVICES
from tracekit.simulation.cut import cut
from tracekit.simulation.grow import Grower
from tracekit.simulation.model import Inv
from tracekit.simulation.otlp import otlp_spans, resource_spans
from tracekit.simulation.scenario import (
    Scenario,
    draw_failure,
    draw_handled,
    draw_recursion,
    draw_refusal,
)
from tracekit.simulation.usage import Sessions
from tracekit.simulation.v1 import v1_events

__all__ = [
    "SimulationRates",
    "SimulationReport",
    "describe_report",
    "parse_duration_ms",
    "simulate",
]

DEFAULT_START: Final = "2026-01-05T00:00:00Z"
DEFAULT_WINDOW_MS: Final = 24 * 3_600_000
_EVENTS_PER_RUN: Final = 21  # the mean, measured; spreads --events fleets over the window
_CHUNK: Final = 1 << 16  # records encoded at a time
_OTLP_BATCH: Final = 512  # spans in one exported line, as the collector's batch processor
_SCOPE: Final = {"name": "tracekit.simulation.simulator", "version": "1"}


@dataclass(frozen=True, slots=True)
class SimulationRates:
    """The share of runs of each kind; the rest end ok.

    Attributes:
        failure: a child throws and nobody catches it (``failed:child``).
        recursion: a delegation closes a circle (``failed:recursion``).
        refusal: a call is refused and not caught (``failed:refused``).
        handled: a delegation fails but a caller catches it (``degraded``).
        cancel: the run is cancelled part-way (``cancelled``).
        crash: the process dies part-way: no exits, no run end (``incomplete``).
    """

    failure: float = 0.06
    recursion: float = 0.02
    refusal: float = 0.03
    handled: float = 0.08
    cancel: float = 0.02
    crash: float = 0.01

    def __post_init__(self) -> None:
        values = tuple(vars_of(self).values())
        if any(v < 0 for v in values) or sum(values) > 1:
            raise TracekitError(
                "simulation rates must be at least 0 and add up to at most 1",
                hint=f"got {', '.join(f'{k}={v}' for k, v in vars_of(self).items())}",
            )


def vars_of(rates: SimulationRates) -> dict[str, float]:
    """The rates by name."""
    return {name: getattr(rates, name) for name in SimulationRates.__slots__}


@dataclass(slots=True)
class SimulationReport:
    """What :func:`simulate` wrote."""

    path: str
    format: str
    runs: int = 0
    events: int = 0
    spans: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    truth: str | None = None


def describe_report(report: SimulationReport) -> str:
    """One line: what was written where, and how many runs of each class."""
    where = "standard output" if report.path == "-" else report.path
    shares = ", ".join(f"{name} {count:,}" for name, count in sorted(report.outcomes.items()))
    runs = f"{report.runs:,} run{'s' * (report.runs != 1)}"
    line = f"wrote {runs}, {report.events:,} event{'s' * (report.events != 1)} to {where}"
    if report.format == "otlp":
        line += f" as {report.spans:,} OTLP spans"
    line += f" ({shares})" if shares else ""
    return line + (f"; truth in {report.truth}" if report.truth else "")


def simulate(
    out: str | os.PathLike[str],
    *,
    runs: int | None = None,
    events: int | None = None,
    seed: int = 0,
    format: Literal["tracekit", "otlp"] = "tracekit",
    start: float | str | None = DEFAULT_START,
    window_ms: float = DEFAULT_WINDOW_MS,
    rates: SimulationRates | None = None,
    truth: str | os.PathLike[str] | None = None,
    compress: bool | None = None,
) -> SimulationReport:
    """Write a simulated fleet to ``out`` (``-`` is standard output).

    Args:
        out: the file to write; a name ending in ``.gz`` is gzipped.
        runs: how many root runs; or
        events: write runs until at least this many v1 records (default 1,000 runs).
        seed: the same seed and arguments give the same bytes.
        format: ``"tracekit"`` (v1 JSON lines) or ``"otlp"`` (OTLP JSON, one
            ``TracesData`` object of up to 512 spans a line).
        start: when the window opens (milliseconds or RFC 3339); None for a
            window that ends now (the bytes then differ from one call to the next).
        window_ms: how long the window is; run starts are spread evenly over it.
        rates: how often each kind of failure happens.
        truth: also write each run's expected class here (JSON lines).
        compress: gzip the output (default: when ``out`` ends in ``.gz``).

    Returns:
        A :class:`SimulationReport` with the counts written.

    Raises:
        TracekitError: an argument is out of range, or a file cannot be written.
    """
    if format not in ("tracekit", "otlp"):
        raise TracekitError(f"unknown format {format!r}", hint="use tracekit or otlp")
    if (runs is not None and runs < 0) or (events is not None and events < 0) or window_ms <= 0:
        raise TracekitError("runs and events must be at least 0, and the window longer than 0")
    path = os.fspath(out)
    report = SimulationReport(path=path, format=format, truth=os.fspath(truth) if truth else None)
    fleet = _Fleet(seed, rates or SimulationRates(), _start_ms(start, window_ms))
    target_runs = runs if runs is not None else None if events is not None else 1000
    expected = target_runs if target_runs is not None else max(1, (events or 0) // _EVENTS_PER_RUN)
    gap = window_ms / max(1, expected)
    zipped = path.endswith(".gz") if compress is None else compress
    with _open(path, zipped) as stream, _open_truth(report.truth) as truth_stream:
        writer = _OtlpWriter(stream, seed) if format == "otlp" else _V1Writer(stream)
        while (target_runs is None and report.events < (events or 0)) or (
            target_runs is not None and report.runs < target_runs
        ):
            run = fleet.next_run(report.runs, gap)
            report.runs += 1
            report.events += len(run.events)
            report.outcomes[run.truth["outcome"]] += 1
            report.spans += writer.add(run)
            if truth_stream is not None:
                truth_stream.write(_TRUTH_ENCODER.encode(run.truth) + b"\n")
        writer.close()
    return report


_TRUTH_ENCODER: Final = msgspec.json.Encoder()


def parse_duration_ms(text: str) -> float:
    """A duration such as ``90s``, ``30m``, ``24h``, ``7d`` (or bare milliseconds) in ms.

    Example:
        >>> parse_duration_ms("2h"), parse_duration_ms("1500")
        (7200000.0, 1500.0)
    """
    ms = duration_ms(text)
    if ms is None:
        raise TracekitError(f"{text!r} is not a duration", hint="write it as 90s, 30m, 24h or 7d")
    return ms


def _start_ms(start: float | str | None, window_ms: float) -> float:
    """When the window opens; without ``start``, so that it ends now (whole seconds)."""
    if start is None:
        return float(int(time.time()) * 1000) - window_ms
    try:
        return parse_ts(start)
    except ValueError as exc:
        raise TracekitError(
            str(exc), hint="give --start as milliseconds or an RFC 3339 time"
        ) from None


@dataclass(slots=True)
class _Run:
    root: Inv
    service: str
    trace_id: str
    events: list[Event]
    truth: dict[str, Any]


class _Fleet:
    """Draws the runs: which service, which scenario, when."""

    def __init__(self, seed: int, rates: SimulationRates, start: float) -> None:
        self.rng = random.Random(seed)
        self.rates = rates
        self.start = start
        self.growers = [Grower(self.rng, service, self._new_id) for service in SERVICES]
        self.weights = [service.weight for service in SERVICES]
        self.sessions = Sessions(seed)

    def _new_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    def next_run(self, index: int, gap: float) -> _Run:
        rng = self.rng
        t0 = int(self.start + index * gap + rng.random() * gap)
        grower = rng.choices(self.growers, self.weights)[0]
        service = grower.service
        outcome, scenario = self._draw(service)
        root = grower.run(t0, scenario)
        if outcome in ("cancelled", "incomplete"):
            assert root.end is not None
            cut(
                root,
                rng.randint(root.start + 1, max(root.start + 1, root.end - 1)),
                cancel=outcome == "cancelled",
            )
        trace_id = f"{rng.getrandbits(128):032x}"
        invs = root.walk()
        truth = _truth(invs, service.name, outcome, scenario, grower.origin)
        session = truth["session_id"] = self.sessions.next(service.name)
        events = v1_events(root, service.name, trace_id, invs, session)
        _usage_truth(truth, events)
        return _Run(root, service.name, trace_id, events, truth)

    def _draw(self, service: Any) -> tuple[str, Scenario]:
        rng, rates = self.rng, self.rates
        roll = rng.random()
        for outcome, rate, draw in (
            ("failed:child", rates.failure, draw_failure),
            ("failed:recursion", rates.recursion, draw_recursion),
            ("failed:refused", rates.refusal, draw_refusal),
            ("degraded", rates.handled, draw_handled),
        ):
            if roll < rate:
                return outcome, draw(rng, service)
            roll -= rate
        for outcome, rate in (("cancelled", rates.cancel), ("incomplete", rates.crash)):
            if roll < rate:
                return outcome, Scenario()
            roll -= rate
        return "ok", Scenario()


def _truth(
    invs: list[Inv], service: str, outcome: str, sc: Scenario, origin: Inv | None
) -> dict[str, Any]:
    root, invocations = invs[0], invs[1:]
    truth: dict[str, Any] = {
        "run_id": root.id,
        "service": service,
        "agent": root.agent,
        "outcome": outcome,
        "start_ms": float(root.start),
        "invocations": len(invocations),
        "failed_invocations": sum(inv.failed for inv in invocations),
        "max_depth": max((inv.depth for inv in invocations), default=0),
    }
    if outcome == "failed:recursion" and sc.terminal and sc.terminal.chain:
        truth["circle"] = canonical_circle(sc.terminal.chain)
        truth["chain"] = list(sc.terminal.chain)
    if outcome in ("failed:child", "failed:refused") and origin is not None and origin.error:
        truth["origin_invocation_id"] = origin.id
        truth["origin_agent"] = origin.agent
        truth["origin_code"] = origin.error.code
        truth["origin_depth"] = origin.depth
    return truth


def _usage_truth(truth: dict[str, Any], events: list[Event]) -> None:
    """The run's tokens, the sum of its invocations' own usage (None when none ran)."""
    usages = [e.usage for e in events if type(e) is Exit and e.usage is not None]
    truth["input_tokens"] = sum(u.inputTokens or 0 for u in usages) if usages else None
    truth["output_tokens"] = sum(u.outputTokens or 0 for u in usages) if usages else None


class _V1Writer:
    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.buffer: list[Event] = []
        self.encoder = msgspec.json.Encoder()

    def add(self, run: _Run) -> int:
        self.buffer.extend(run.events)
        if len(self.buffer) >= _CHUNK:
            self.flush()
        return 0

    def flush(self) -> None:
        if self.buffer:
            self.stream.write(self.encoder.encode_lines(self.buffer))
            self.buffer.clear()

    def close(self) -> None:
        self.flush()


class _OtlpWriter:
    """Spans in batches of 512, a batch a line, as the collector's file exporter writes."""

    def __init__(self, stream: IO[bytes], seed: int) -> None:
        self.stream = stream
        self.rng = random.Random(f"{seed}:otlp")  # span ids of tool and step spans only
        self.batch: list[tuple[str, dict[str, Any]]] = []
        self.encoder = msgspec.json.Encoder()

    def _new_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    def add(self, run: _Run) -> int:
        spans = otlp_spans(run.root, run.trace_id, self._new_id, run.truth.get("session_id"))
        for span in spans:
            self.batch.append((run.service, span))
            if len(self.batch) >= _OTLP_BATCH:
                self.flush()
        return len(spans)

    def flush(self) -> None:
        if self.batch:
            self.stream.write(self.encoder.encode(resource_spans(self.batch, _SCOPE)) + b"\n")
            self.batch.clear()

    def close(self) -> None:
        self.flush()


@contextmanager
def _open(path: str, zipped: bool) -> Iterator[IO[bytes]]:
    try:
        raw: IO[bytes] = sys.stdout.buffer if path == "-" else open(path, "wb")  # noqa: SIM115
    except OSError as exc:
        raise TracekitError(f"{path}: cannot write ({exc.strerror or exc})") from None
    try:
        if zipped:
            # mtime=0 and no file name keep the gzip header the same on every run
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as z:
                yield z  # type: ignore[misc]
        else:
            yield raw
    finally:
        if path != "-":  # Jupyter's sys.stdout has no .buffer: compare the path instead
            raw.close()
        else:
            raw.flush()


@contextmanager
def _open_truth(path: str | None) -> Iterator[IO[bytes] | None]:
    if path is None:
        yield None
        return
    try:
        stream = open(path, "wb")  # noqa: SIM115
    except OSError as exc:
        raise TracekitError(f"{path}: cannot write ({exc.strerror or exc})") from None
    with stream:
        yield stream
