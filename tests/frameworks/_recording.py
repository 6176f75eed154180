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
    return json.dumps(_hex_ids(request), separators=(",", ":"))


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
        outcome: str | None = None,
        circle: str | None = None,
    ) -> None:
        """Write the scenario's spans and its ground truth, then forget the spans.

        ``outcome`` is the fleet class of what happened (``outcome_of`` the truth unless
        given: a framework's own loop limit is ``failed:recursion``); ``circle``, for a
        loop, is its cycle of agents (``circle_of``).
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
            "outcome": outcome or outcome_of(run_ok, truth),
        }
        if circle is not None:
            expected["circle"] = circle
        text = json.dumps(expected, indent=2) + "\n"
        (self.folder / f"{scenario}.expected.json").write_text(text)
        self.written.append(scenario)
        self.exporter.clear()
        print(f"{self.name}/{scenario}: {len(spans)} spans")


def outcome_of(run_ok: bool, truth: Truth) -> str:
    """The fleet class of a run: raised (``failed:child``), a failure handled inside
    (``degraded``: an agent's its caller caught, or a tool's its agent went on from), or ``ok``."""
    if not run_ok:
        return "failed:child"
    rows = truth.invocations
    handled = any(not i["ok"] or any(not t["ok"] for t in i["tools"]) for i in rows)
    return "degraded" if handled else "ok"


def circle_of(agents: list[str]) -> str:
    """The first cycle in a sequence of agents, from its alphabetically smallest agent.

    >>> circle_of(["triage", "billing", "triage"])
    'billing -> triage -> billing'
    """
    for end, agent in enumerate(agents):
        if agent in agents[:end]:
            cycle = agents[agents.index(agent) : end]
            start = cycle.index(min(cycle))
            cycle = cycle[start:] + cycle[:start]
            return " -> ".join([*cycle, cycle[0]])
    raise ValueError(f"no agent repeats in {agents}")


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
