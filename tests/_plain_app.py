"""A plain OpenTelemetry app with no GenAI attributes, that records its own truth.

Agents are ``agent:<name>`` spans carrying ``app.agent``; tools are ``tool:<name>``
spans; an agent entered again while it runs refuses with ``LoopRefused``
raised inside its own span. The truth is noted from the code as it runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracekit.simulation.otel_export import otlp_json_lines

DIALECT = """\
[dialect]
name = "plain app"

[agents]
names = ["agent:*"]
attributes = ["app.agent"]
name_from = ["app.agent"]

[tools]
names = ["tool:*"]

[errors]
loop_refusal = ["LoopRefused"]
"""


class LoopRefused(RuntimeError):
    """The app's guard: an agent already running was called again."""


@dataclass
class PlainApp:
    """Runs agents as plain spans and notes what happened (invocations as the golden truth)."""

    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    invocations: list[dict[str, Any]] = field(default_factory=list)
    _stack: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        provider = TracerProvider(resource=Resource.create({"service.name": "desk"}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("plain-app")

    def agent(self, name: str, body: Callable[[], None] = lambda: None) -> None:
        parent = self._stack[-1] if self._stack else None
        row = {"agent": name, "parent": parent, "ok": True, "tools": []}
        self.invocations.append(row)
        me = len(self.invocations) - 1
        running = [self.invocations[i]["agent"] for i in self._stack]
        with self.tracer.start_as_current_span(f"agent:{name}", attributes={"app.agent": name}):
            self._stack.append(me)
            try:
                if name in running:
                    raise LoopRefused(f"{name} is already running")
                body()
            except BaseException:
                row["ok"] = False
                raise
            finally:
                self._stack.pop()

    def tool(self, name: str) -> None:
        owner = self.invocations[self._stack[-1]]
        owner["tools"].append({"name": name, "ok": True})
        with self.tracer.start_as_current_span(
            f"tool:{name}", attributes={"app.agent": owner["agent"]}
        ):
            pass

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(otlp_json_lines(self.exporter.get_finished_spans())) + "\n")
        return path


def loop_run(path: Path) -> tuple[Path, PlainApp]:
    """triage -> billing -> refunds -> billing again: refused; nobody catches it."""
    app = PlainApp()

    def refunds() -> None:
        app.tool("issue_refund")
        app.agent("billing")

    def billing() -> None:
        app.tool("get_invoice")
        app.agent("refunds", refunds)

    def triage() -> None:
        app.tool("lookup_customer")
        app.agent("billing", billing)

    with contextlib.suppress(LoopRefused):  # nobody catches it: the run fails
        app.agent("triage", triage)
    return app.write(path), app


def chain_run(path: Path) -> tuple[Path, PlainApp]:
    """triage -> billing -> refunds, each with a tool: all ok."""
    app = PlainApp()
    app.agent(
        "triage",
        lambda: (app.tool("lookup_customer"), app.agent("billing", lambda: (
            app.tool("get_invoice"), app.agent("refunds", lambda: app.tool("issue_refund"))))),
    )  # fmt: skip
    return app.write(path), app
