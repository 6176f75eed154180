"""What every ``record_<framework>.py`` script shares: offline, spans in memory, OTLP JSON out.

The scripts run in each framework's own virtual environment (``.frameworks/<name>/``,
made by ``make record-frameworks``), so this module needs only the standard library,
the OpenTelemetry SDK and its OTLP encoder; never tracekit.

The ground truth (``<scenario>.expected.json``) is written from what the scenario
did (the scripted model's turns and the tools' own log), never from tracekit.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _paths import scrub_paths
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# TRACEKIT_RECORDINGS writes elsewhere (to compare a new run with the committed one).
RECORDINGS = Path(os.environ.get("TRACEKIT_RECORDINGS") or Path(__file__).parent / "recordings")
# The agents in the order they started, noted by the scripts where an agent begins (its
# model's first turn, or the tool that runs it): concurrent delegates start in any order.
STARTED: list[str] = []
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a connect is refused


def go_offline() -> None:
    """Refuse every network connection and give the model clients dummy keys.

    A scripted model never calls out; if something in a framework tried to
    (a model client, its own trace exporter), it fails here at once.
    """
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        os.environ[key] = "offline-dummy-key"
    os.environ["OPENAI_BASE_URL"] = f"{CLOSED}/v1"
    os.environ["AWS_ACCESS_KEY_ID"] = "offline"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "offline"
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ["OTEL_SDK_DISABLED"] = "false"

    def refuse(self: socket.socket, address: Any) -> Any:
        if self.family == socket.AF_UNIX:
            return _connect(self, address)
        raise ConnectionRefusedError(f"recording is offline: no connection to {address!r}")

    _connect = socket.socket.connect
    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = lambda self, address: refuse(self, address)  # type: ignore[method-assign]


def memory_provider(service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider whose spans end up in memory, as each ends."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _hex(value: str) -> str:
    return base64.b64decode(value).hex()


def _hex_ids(request: dict[str, Any]) -> dict[str, Any]:
    """protobuf's JSON writes bytes as base64; OTLP/JSON wants trace and span ids in hex."""
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _hex(span[key])
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = _hex(link[key])
    return request


def otlp_json_line(spans: Any) -> str:
    """The spans as one line of the Collector's file exporter (integer enums, hex ids)."""
    message = encode_spans(list(spans))
    request = MessageToDict(message, use_integers_for_enums=True)
    return scrub_paths(json.dumps(_hex_ids(request), separators=(",", ":")))


@dataclass
class Truth:
    """The invocations a scenario made, in order of start, with the tools each called."""

    invocations: list[dict[str, Any]] = field(default_factory=list)

    def agent(
        self, name: str, parent: int | None = None, kind: str | None = None, node: str | None = None
    ) -> int:
        """Add an invocation; return its index."""
        self.invocations.append(
            {"agent": name, "parent": parent, "kind": kind, "node": node, "ok": True, "tools": []}
        )
        return len(self.invocations) - 1

    def tool(self, index: int, name: str, ok: bool = True) -> None:
        """A plain tool the invocation called itself, and whether it raised."""
        self.invocations[index]["tools"].append({"name": name, "ok": ok})

    def failed(self, *indexes: int) -> None:
        """These invocations ended by raising."""
        for index in indexes:
            self.invocations[index]["ok"] = False


@dataclass
class Recorder:
    """Writes one framework's recordings: ``<scenario>.otlp.json`` and ``.expected.json``."""

    name: str  # the folder: openai_agents, pydantic_ai, ...
    framework: str  # the distribution: openai-agents, pydantic-ai-slim, ...
    instrumentation: str  # "native OpenTelemetry" or "<distribution> <version>"
    exporter: InMemorySpanExporter
    written: list[str] = field(default_factory=list)
    #: How this instrumentation names the span a handoff is, from the caller and the
    #: target (the scenarios name it as OpenInference does): the truth's node.
    handoff_node: Callable[[str, str], str] | None = None
    #: The loop fields of a scenario written without them (another script's scenarios).
    loops: Callable[[str, Truth], Loop | None] | None = None

    def __post_init__(self) -> None:
        # A scenario renamed or dropped must not leave its old files behind (on a full run).
        if not sys.argv[1:]:
            for stale in self.folder.glob("*.json"):
                stale.unlink()

    def chosen(self, scenarios: list[Any]) -> list[Any]:
        """The scenarios named on the command line (all of them when none is).

        Re-recording changes every timestamp and id, so recording one scenario leaves
        the others (and the golden trees made from them) as they are.
        """
        wanted = sys.argv[1:]
        unknown = set(wanted) - {s.__name__ for s in scenarios}
        if unknown:
            raise SystemExit(f"no such scenario: {', '.join(sorted(unknown))}")
        return [s for s in scenarios if not wanted or s.__name__ in wanted]

    @property
    def folder(self) -> Path:
        return RECORDINGS / self.name

    def start(self) -> None:
        """Forget the spans and starts of anything run before the scenario."""
        self.exporter.clear()
        STARTED.clear()

    def write(
        self,
        scenario: str,
        *,
        note: str,
        result: dict[str, Any],
        run_ok: bool,
        truth: Truth,
        loop: Loop | None = None,
    ) -> None:
        """Write the scenario's spans and its ground truth, then forget the spans.

        A scenario whose agents went round (``loop``) adds the class it must be given
        (``outcome``), its ``circle``, the framework ``limit`` that stopped it and how
        many times the circle closed (``loop_revisits``).
        """
        if self.handoff_node is not None:
            rows = truth.invocations
            for row in rows:
                if row["kind"] == "handoff":
                    row["node"] = self.handoff_node(rows[row["parent"]]["agent"], row["agent"])
        spans = self.exporter.get_finished_spans()
        if not spans:
            raise RuntimeError(f"{self.name}/{scenario}: no span was recorded")
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{scenario}.otlp.json").write_text(otlp_json_line(spans) + "\n")
        expected = {
            "framework": self.framework,
            "version": version(self.framework),
            "instrumentation": self.instrumentation,
            "scenario": scenario,
            "note": note,
            "result": result,
            "run_ok": run_ok,
            "invocations": truth.invocations,
        }
        loop = loop or (self.loops(scenario, truth) if self.loops else None)
        if loop is not None:
            expected.update(loop.fields())
        text = json.dumps(expected, indent=2) + "\n"
        (self.folder / f"{scenario}.expected.json").write_text(text)
        self.written.append(scenario)
        self.exporter.clear()
        print(f"{self.name}/{scenario}: {len(spans)} spans")


OUTCOMES = ("ok", "degraded", "failed:recursion", "failed:child")


@dataclass
class Loop:
    """What a scenario whose agents went round must be classified as.

    ``outcome`` is decided from how the run ended: a limit raised after the agents
    cycled is ``failed:recursion``; cut off silently at a limit, or a limit the app
    handled, is ``degraded``; agents that revisited and then finished are ``ok``; a
    child that threw is ``failed:child``. ``limit`` is the limit's error type or the
    framework's stop reason (None when no limit struck).
    """

    outcome: str
    circle: str | None
    limit: str | None
    revisits: int

    def fields(self) -> dict[str, Any]:
        assert self.outcome in OUTCOMES, self.outcome
        return {
            "outcome": self.outcome,
            "circle": self.circle,
            "limit": self.limit,
            "loop_revisits": self.revisits,
        }


def ended_loop(*scenarios: str) -> Callable[[str, Truth], Loop | None]:
    """For ``Recorder.loops``: these scenarios are loops that ended ok."""

    def loop(scenario: str, truth: Truth) -> Loop | None:
        if scenario not in scenarios:
            return None
        circle, closures = circle_of([row["agent"] for row in truth.invocations])
        return Loop("ok", circle, None, closures)

    return loop


def circle_of(agents: list[str]) -> tuple[str | None, int]:
    """The repeated cycle in a sequence of agents, canonical, and how many times it closed.

    The cycle is the shortest period (two agents or more) of the longest stretch of
    the sequence that repeats it; it is written from its smallest rotation (so from
    the alphabetically smallest agent) and ends where it began. It closed once each
    time the stretch came back to the agent it started from. No stretch that closes
    at least once: no circle.

    >>> circle_of(["triage", "billing", "triage", "billing", "triage"])
    ('billing -> triage -> billing', 2)
    >>> circle_of(["triage", "billing", "refunds", "triage"])
    ('billing -> refunds -> triage -> billing', 1)
    """
    best: tuple[int, int, int] | None = None  # (closures, -period, start)
    for period in range(2, len(agents)):
        start = 0
        for end in range(period, len(agents) + 1):
            if end < len(agents) and agents[end] == agents[end - period]:
                continue
            closures = (end - start - 1) // period
            if closures and (best is None or (closures, -period) > best[:2]):
                best = (closures, -period, start)
            start = end - period + 1
    if best is None:
        return None, 0
    closures, period, start = best[0], -best[1], best[2]
    cycle = agents[start : start + period]
    cycle = min(cycle[n:] + cycle[:n] for n in range(period))
    return " -> ".join([*cycle, cycle[0]]), closures


def started(agent: str) -> None:
    """Note that ``agent`` began (once: later calls for the same agent are ignored)."""
    if agent not in STARTED:
        STARTED.append(agent)


def in_start_order(agents: list[str]) -> list[str]:
    """The agents sorted by when they began (each must have begun)."""
    return sorted(agents, key=STARTED.index)


def instrumented_by(distribution: str) -> str:
    """``"<distribution> <installed version>"``."""
    return f"{distribution} {version(distribution)}"


#: The scenarios every instrumentation of a framework records, by their function names.
SHARED_SCENARIOS = ("handoff_chain", "handoff_then_tool_agent", "tool_raises")


def shared_scenarios(recorder: Recorder, scenarios: Any, *more: Any) -> list[Any]:
    """The chosen ones of the scenarios every instrumentation of a framework records.

    ``scenarios`` is the framework's own recording script (its handoff chain, its
    handoff then a tool agent, its raising tool), and ``more`` what this
    instrumentation records besides (a loop, parallel delegates, ...), in order.
    """
    shared = [getattr(scenarios, name) for name in SHARED_SCENARIOS]
    return recorder.chosen([*shared, *more])


def openllmetry_recorder(
    name: str, framework: str, distribution: str, instrumentor: Any, **options: Any
) -> tuple[Recorder, TracerProvider]:
    """A recorder of OpenLLMetry's ``instrumentor`` (of ``distribution``) on ``framework``.

    The instrumentor writes to a provider that keeps its spans in memory, named
    after the recording (``openllmetry_agno``: ``openllmetry-agno-recording``);
    ``options`` are the :class:`Recorder`'s. Shut the provider down at the end.
    """
    provider, exporter = memory_provider(f"{name.replace('_', '-')}-recording")
    instrumentor.instrument(tracer_provider=provider)
    return Recorder(name, framework, instrumented_by(distribution), exporter, **options), provider
