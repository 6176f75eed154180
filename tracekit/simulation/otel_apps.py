"""A tiny multi-agent runtime on the plain OpenTelemetry SDK, that records its own truth.

Agents are functions run inside ``invoke_agent`` spans (GenAI attributes),
tools inside ``execute_tool`` spans and model calls inside ``chat`` spans with
their token usage, as an app instrumented by hand with OpenTelemetry writes
them: a failure is what the SDK records on its own (an ``exception`` event
with ``exception.type``, ``exception.message`` and ``exception.stacktrace``,
status ERROR), plus ``error.type`` where the service sets it. No tracekit
attribute is written.

While it runs, the runtime notes what happened from the code's side (never
from the spans): which invocation first raised the exception that ended the
run (:class:`Truth`), and the circle of agents when a loop guard or a depth
limit refused a call. Each service has its own :class:`TracerProvider`, all
exporting to one place.

Example:
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> apps = Apps(InMemorySpanExporter(), services=("desk",))
    >>> def root() -> None:
    ...     apps.model("desk", 10, 5)
    >>> apps.run("desk", "desk", root).outcome
    'ok'
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

from tracekit.events import canonical_circle

__all__ = ["Apps", "DepthLimitExceeded", "LoopDetected", "Truth"]

_STACK: Final[contextvars.ContextVar[tuple[tuple[str, int], ...]]] = contextvars.ContextVar(
    "otel_apps_stack", default=()
)
_ORIGIN: Final = "_otel_apps_origin"


class LoopDetected(RuntimeError):
    """An app's own guard refused to enter an agent already on the call path."""


class DepthLimitExceeded(RuntimeError):
    """An app's delegation depth limit was reached."""


@dataclass
class Truth:
    """What the code did in one run, recorded as it ran.

    Attributes:
        outcome: ok | degraded | failed:child | failed:recursion.
        origin_agent: the agent whose code first raised (None when nothing did).
        origin_depth: its depth (0 for the run's root agent, 1 for the agents it calls).
        origin_code: the class name of the exception first raised.
        circle: the canonical circle a guard or depth limit refused, when that ended the run.
    """

    outcome: str = "ok"
    origin_agent: str | None = None
    origin_depth: int | None = None
    origin_code: str | None = None
    circle: str | None = None
    trace_id: str = ""


@dataclass
class _Origin:
    agent: str
    depth: int
    code: str
    circle: str | None = None


@dataclass
class Apps:
    """Agents, tools and model calls as spans of several services, and the truth of each run.

    Attributes:
        exporter: where every service's spans go.
        services: the services, one tracer provider each.
        typed: the services that set ``error.type`` (the fully qualified class).
        max_depth: the delegation depth limit (the root agent is at depth 0).
        guard_in_caller: the loop guard checks in the caller, before the
            refused agent's span opens (else at the top of the refused agent,
            inside its span).
    """

    exporter: SpanExporter
    services: Sequence[str] = ("desk", "billing", "refunds")
    typed: frozenset[str] = frozenset()
    max_depth: int = 12
    guard_in_caller: bool = False
    _tracers: dict[str, Tracer] = field(default_factory=dict)
    _handled: list[_Origin] = field(default_factory=list)
    _handed: tuple[str, tuple[tuple[str, int], ...]] | None = None

    def __post_init__(self) -> None:
        for service in self.services:
            provider = TracerProvider(resource=Resource.create({"service.name": service}))
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
            self._tracers[service] = provider.get_tracer("otel_apps")

    @contextmanager
    def _span(self, service: str, name: str, attrs: dict[str, Any]) -> Iterator[Any]:
        tracer = self._tracers[service]
        with tracer.start_as_current_span(name, attributes=attrs) as span:
            try:
                yield span
            except BaseException as exc:
                if service in self.typed:
                    kind = type(exc)
                    span.set_attribute("error.type", f"{kind.__module__}.{kind.__qualname__}")
                raise  # the SDK records the exception and sets status ERROR

    def agent(self, service: str, name: str, body: Callable[[], Any], guard: bool = False) -> Any:
        """Run ``body`` as agent ``name``: an ``invoke_agent`` span of ``service``.

        With ``guard``, entering an agent already on the call path raises
        :class:`LoopDetected` (the app's loop guard); past ``max_depth``,
        :class:`DepthLimitExceeded`. Both are raised inside the refused
        agent's own span, as a guard at the top of the agent's code would,
        or, with ``guard_in_caller``, the loop guard raises in the caller
        before the refused agent's span opens (its origin is the caller).
        """
        stack = _STACK.get()
        if guard and self.guard_in_caller and stack:
            self._refuse_in_caller(name, stack)
        handed, self._handed = self._handed, None
        if handed is not None and handed[0] == name and handed[1][:-1] == stack:
            stack = handed[1]  # handed over: it runs in the place of the agent that handed off
        depth = len(stack)
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        token = _STACK.set((*stack, (name, depth)))
        try:
            with self._span(service, f"invoke_agent {name}", attrs):
                try:
                    names = [n for n, _ in stack]
                    if guard and name in names:
                        loop = names[len(names) - 1 - names[::-1].index(name) :]
                        raise LoopDetected("delegation loop: " + " -> ".join([*loop, name]))
                    if depth > self.max_depth:
                        raise DepthLimitExceeded(f"max delegation depth {self.max_depth} reached")
                    return body()
                except BaseException as exc:
                    self._mark(exc, name, depth, [*names, name])
                    raise
        finally:
            _STACK.reset(token)

    def _refuse_in_caller(self, name: str, stack: tuple[tuple[str, int], ...]) -> None:
        """The caller's guard: refuse ``name`` if it is on the call path, before its span opens."""
        names = [n for n, _ in stack]
        if name not in names:
            return
        loop = [*names[len(names) - 1 - names[::-1].index(name) :], name]
        exc = LoopDetected("delegation loop: " + " -> ".join(loop))
        caller, depth = stack[-1]
        setattr(exc, _ORIGIN, _Origin(caller, depth, type(exc).__name__, canonical_circle(loop)))
        raise exc

    def _mark(self, exc: BaseException, name: str, depth: int, path: list[str]) -> None:
        """Note the invocation where an exception was first raised, once."""
        if _origin_of(exc) is not None:
            return
        circle = None
        if isinstance(exc, LoopDetected | DepthLimitExceeded):
            first = path[:-1][::-1].index(name) if name in path[:-1] else None
            if first is not None:
                circle = canonical_circle(path[len(path) - 2 - first :])
        setattr(exc, _ORIGIN, _Origin(name, depth, type(exc).__name__, circle))

    def tool(
        self,
        service: str,
        name: str,
        body: Callable[[], Any] | None = None,
        args: dict[str, Any] | None = None,
    ) -> Any:
        """Run a tool call in an ``execute_tool`` span (its arguments as JSON, if any).

        An exception a tool raises began in the agent that called it (a tool
        is that agent's step), which is noted as its origin.
        """
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        if args is not None:
            attrs["gen_ai.tool.call.arguments"] = json.dumps(args)
        with self._span(service, f"execute_tool {name}", attrs):
            try:
                return body() if body is not None else None
            except BaseException as exc:
                stack = _STACK.get()
                if stack:
                    agent, depth = stack[-1]
                    self._mark(exc, agent, depth, [n for n, _ in stack])
                raise

    def transfer(self, service: str, target: str) -> None:
        """The current agent hands the conversation to ``target`` (a transfer tool call).

        The next agent started is ``target``, at the depth below the agent
        that handed off, as tracekit draws a handoff.
        """
        self.tool(service, f"transfer_to_{target}", args={"agent_name": target})
        self._handed = (target, _STACK.get())

    def model(self, service: str, input_tokens: int, output_tokens: int) -> None:
        """A model call with its usage, in a ``chat`` span."""
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-test",
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
        }
        with self._span(service, "chat gpt-test", attrs):
            pass

    def handled(self, exc: BaseException) -> None:
        """An agent caught ``exc`` and went on: the run, if it ends ok, is degraded."""
        origin = _origin_of(exc)
        if origin is not None:
            self._handled.append(origin)

    def run(self, service: str, name: str, body: Callable[[], Any], guard: bool = False) -> Truth:
        """Run one root agent; return what happened, as the code saw it."""
        self._handled.clear()
        try:
            self.agent(service, name, body, guard=guard)
        except Exception as exc:  # the run failed: its failure began where it was first raised
            origin = _origin_of(exc)
            assert origin is not None, "every failure is marked by the agent that raised it"
            outcome = "failed:recursion" if origin.circle else "failed:child"
            return _truth(outcome, origin)
        if self._handled:
            return _truth("degraded", self._handled[0])
        return Truth()


def _origin_of(exc: BaseException | None) -> _Origin | None:
    """The origin an exception carries, or one of the exceptions it was raised from."""
    seen = 0
    while exc is not None and seen < 32:
        origin: _Origin | None = getattr(exc, _ORIGIN, None)
        if origin is not None:
            return origin
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _truth(outcome: str, origin: _Origin) -> Truth:
    # A circle is the class's: a refused loop that was handled leaves the run degraded.
    circle = origin.circle if outcome == "failed:recursion" else None
    return Truth(outcome, origin.agent, origin.depth, origin.code, circle)
