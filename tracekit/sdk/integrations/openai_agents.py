"""tracekit for the OpenAI Agents SDK: a ``TracingProcessor`` that writes v1 records.

Install with ``pip install 'tracekit-agents[openai-agents]'`` and register the
processor beside (``add_trace_processor``) or instead of
(``set_trace_processors``) the SDK's own exporter::

    from agents import Runner, add_trace_processor
    from tracekit.sdk import AgentTracer, JsonlSink
    from tracekit.sdk.integrations.openai_agents import OpenAIAgentsProcessor

    add_trace_processor(OpenAIAgentsProcessor(AgentTracer(JsonlSink("run.jsonl"))))
    result = await Runner.run(triage, "I was charged twice.")

The SDK's spans map onto tracekit's scopes (each held in a context of its
own, so the agent's context is never touched):

* ``agent``: the first agent of a run is a root run (``session`` is the
  trace's ``group_id``). An agent that receives a **handoff** is an
  invocation of kind ``handoff`` whose parent is the agent that handed off,
  its node the handoff tool (``transfer_to_<name>``): in the SDK the target's
  span is a sibling of the source's, only the ``handoff`` span
  (``from_agent``, ``to_agent``) names both. The source stays open until the
  target ends, as the run goes on in the target. An agent run inside a tool
  (``Agent.as_tool``) is a ``delegate`` whose node is the tool.
* ``function``: a tool call, a step with ``call="tool"``, failed when the
  span has an error (the SDK turns a tool's exception into a message for the
  model: the agent goes on).
* ``generation`` / ``response``: their tokens and model go to the agent's own
  usage (``exit.usage``; ``run.end.usage`` for the root agent). No step.
* ``guardrail``: a step named after the guardrail; when it trips, the step
  and its agent fail with ``GUARDRAIL_TRIPPED`` (the SDK raises, and does
  not mark the agent's span).
* ``task``, ``turn`` and the rest: not recorded (their children are).

An error on an agent span (``Error in agent run``) ends its invocation as
``error``, and every agent that handed off to it, as the run failed. The
processor never raises into the SDK: a failure of its own is logged once.
"""

from __future__ import annotations

import contextvars
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Final

from tracekit._util.extras import install_line

try:
    from agents.tracing import Span, Trace, TracingProcessor
except ModuleNotFoundError:  # one line that says what to install, not a bare import error
    raise ModuleNotFoundError(
        f"tracekit.sdk.integrations.openai_agents needs the OpenAI Agents SDK:"
        f" {install_line('openai-agents')}"
    ) from None

from tracekit.errors import AgentError
from tracekit.sdk import AgentTracer, Scope

__all__ = ["OpenAIAgentsProcessor"]

_log = logging.getLogger("tracekit.sdk")
_NOT_NAME: Final = re.compile(r"[^a-zA-Z0-9_]")
GUARDRAIL_TRIPPED: Final = "GUARDRAIL_TRIPPED"


def handoff_tool(agent: str) -> str:
    """The SDK's default name of the tool that hands off to ``agent``.

    Example:
        >>> handoff_tool("Billing Agent")
        'transfer_to_billing_agent'
    """
    return _NOT_NAME.sub("_", f"transfer_to_{agent}").lower()


@dataclass(eq=False)
class _Open:
    """A tracekit scope open for one of the SDK's spans, in its own context."""

    scope: Scope
    ctx: contextvars.Context
    agent: bool
    source: _Open | None = None  # the agent that handed off to this one
    above: str | None = None  # the SDK's parent span id
    handed_off: bool = False
    deferred: bool = False  # its span ended after a handoff: it ends with its target
    error: BaseException | None = None
    tripped: BaseException | None = None  # a guardrail of this agent tripped: the run raises
    closed: bool = False


@dataclass
class _TraceState:
    session: str | None = None
    spans: dict[str, tuple[str | None, _Open | None]] = field(default_factory=dict)
    handoffs: dict[str, list[_Open]] = field(default_factory=dict)  # target -> sources
    opened: list[_Open] = field(default_factory=list)


class OpenAIAgentsProcessor(TracingProcessor):
    """The OpenAI Agents SDK's ``TracingProcessor``, writing tracekit records.

    Args:
        tracer: the ``AgentTracer`` whose sinks (and OpenTelemetry provider)
            receive the records. Its guards must not wrap failures.

    Raises:
        ValueError: the tracer's guards wrap failures.
    """

    def __init__(self, tracer: AgentTracer) -> None:
        if tracer.guards is not None and tracer.guards.wrap_failures:
            raise ValueError("OpenAIAgentsProcessor needs Guards(wrap_failures=False)")
        self.tracer = tracer
        self._traces: dict[str, _TraceState] = {}
        self._lock = threading.RLock()
        self._failed = False

    # -- the SDK's hooks: none of them ever raises -------------------------------
    def on_trace_start(self, trace: Trace) -> None:
        with self._guard():
            group = getattr(trace, "group_id", None)
            self._traces[trace.trace_id] = _TraceState(session=group or None)

    def on_trace_end(self, trace: Trace) -> None:
        with self._guard():
            state = self._traces.pop(trace.trace_id, None)
            if state is not None:
                _close_all(state)

    def on_span_start(self, span: Span[Any]) -> None:
        with self._guard():
            state = self._traces.setdefault(span.trace_id, _TraceState())
            data = span.span_data
            opened: _Open | None = None
            if data.type == "agent":
                opened = self._start_agent(state, span.parent_id, str(data.name))
            elif data.type == "function":
                opened = self._start_step(state, span.parent_id, str(data.name), "tool")
            elif data.type == "guardrail":
                opened = self._start_step(state, span.parent_id, str(data.name), None)
            if opened is not None:
                opened.above = span.parent_id
            state.spans[span.span_id] = (span.parent_id, opened)

    def on_span_end(self, span: Span[Any]) -> None:
        with self._guard():
            state = self._traces.get(span.trace_id)
            if state is None:
                return
            _, opened = state.spans.get(span.span_id, (span.parent_id, None))
            data = span.span_data
            if data.type in ("generation", "response"):
                _add_usage(_nearest(state, span.parent_id), data)
            elif data.type == "handoff":
                self._handed_off(state, span)
            elif opened is not None and opened.agent:
                _end_agent(opened, _error_of(span) or opened.tripped)
            elif opened is not None:
                _close(opened, self._tripped(state, opened, data) or _error_of(span))

    def shutdown(self) -> None:
        with self._guard():
            for state in list(self._traces.values()):
                _close_all(state)
            self._traces.clear()
            self.tracer.flush()

    def force_flush(self) -> None:
        with self._guard():
            self.tracer.flush()

    # -- the mapping ----------------------------------------------------------------
    def _start_agent(self, state: _TraceState, parent_id: str | None, name: str) -> _Open:
        sources = state.handoffs.get(name)
        if sources:  # the target of a handoff: under the agent that handed off
            source = sources.pop(0)
            inv = self.tracer.handoff(name, node=handoff_tool(name))
            return _enter(state, inv, source.ctx.copy(), agent=True, source=source)
        above = _nearest(state, parent_id)
        if above is None:  # the run's first agent
            run = self.tracer.run(name, session=state.session)
            return _enter(state, run, contextvars.copy_context(), agent=True)
        # Agent.as_tool: under the tool's step, which becomes its node.
        return _enter(state, self.tracer.delegate(name), above.ctx.copy(), agent=True)

    def _start_step(
        self, state: _TraceState, parent_id: str | None, name: str, call: Any
    ) -> _Open | None:
        above = _nearest(state, parent_id)
        if above is None:  # outside any agent: nothing to hang it on
            return None
        return _enter(state, self.tracer.step(name, call=call), above.ctx.copy(), agent=False)

    def _tripped(self, state: _TraceState, opened: _Open, data: Any) -> BaseException | None:
        """A tripped guardrail: its step fails, and so does its agent (the SDK raises)."""
        if data.type != "guardrail" or not getattr(data, "triggered", False):
            return None
        error = AgentError(f"guardrail {data.name} tripped", code=GUARDRAIL_TRIPPED)
        agent = _nearest_agent(state, opened.above)
        if agent is not None:
            agent.tripped = error
        return error

    def _handed_off(self, state: _TraceState, span: Span[Any]) -> None:
        target = getattr(span.span_data, "to_agent", None)
        source = _nearest_agent(state, span.parent_id)
        if span.error is None and target and source is not None:
            source.handed_off = True
            state.handoffs.setdefault(str(target), []).append(source)

    # -- never break the agent ---------------------------------------------------
    def _guard(self) -> _Guard:
        return _Guard(self)

    def _failed_once(self, exc: BaseException) -> None:
        if self._failed:
            return
        self._failed = True
        _log.warning(
            "tracekit: the OpenAI Agents processor failed (%s: %s); the agents carry on, "
            "some records may be missing. Further failures are not logged.",
            type(exc).__name__,
            exc,
        )


class _Guard:
    """Hold the processor's lock; swallow (and log once) whatever goes wrong inside."""

    def __init__(self, processor: OpenAIAgentsProcessor) -> None:
        self.processor = processor

    def __enter__(self) -> None:
        self.processor._lock.acquire()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self.processor._lock.release()
        if isinstance(exc, Exception):
            self.processor._failed_once(exc)
            return True
        return False


def _enter(
    state: _TraceState,
    scope: Scope,
    ctx: contextvars.Context,
    *,
    agent: bool,
    source: _Open | None = None,
) -> _Open:
    opened = _Open(scope, ctx, agent, source)
    try:
        ctx.run(scope.__enter__)
    except AgentError as refusal:  # the tracer's guards refused the call: it ended there
        opened.closed = True
        opened.error = refusal
    state.opened.append(opened)
    return opened


def _close(opened: _Open, exc: BaseException | None) -> None:
    if opened.closed:
        return
    opened.closed = True
    opened.ctx.run(opened.scope.__exit__, type(exc) if exc else None, exc, None)


def _end_agent(opened: _Open, exc: BaseException | None) -> None:
    """End an agent's scope, or hold it open while the agent it handed off to runs."""
    if opened.handed_off and not opened.closed:
        opened.deferred, opened.error = True, exc
        return
    _close(opened, exc)
    exc = exc or opened.error
    source = opened.source
    while source is not None and source.deferred and not source.closed:
        _close(source, source.error or exc)  # the run went on in its target: it ends as it did
        exc = source.error or exc
        source = source.source


def _close_all(state: _TraceState) -> None:
    """The trace ended: close what is still open, innermost first."""
    for opened in reversed(state.opened):
        _close(opened, opened.error)


def _nearest(state: _TraceState, span_id: str | None) -> _Open | None:
    """The open scope of the nearest span above (an agent or a tool step)."""
    seen = 0
    while span_id is not None and seen < 10_000:
        parent, opened = state.spans.get(span_id, (None, None))
        if opened is not None:
            return opened
        span_id, seen = parent, seen + 1
    return None


def _nearest_agent(state: _TraceState, span_id: str | None) -> _Open | None:
    opened = _nearest(state, span_id)
    while opened is not None and not opened.agent:
        opened = _nearest(state, opened.above)
    return opened


def _error_of(span: Span[Any]) -> BaseException | None:
    """The span's error as an exception tracekit records: its code, its message."""
    error = span.error
    if not error:
        return None
    message = str(error.get("message") or "error")
    data = error.get("data")
    if not isinstance(data, dict):
        return AgentError(message, code=message)
    # The exception's class when the SDK gives it; a tool's error carries only its
    # words ("Error running tool (non-fatal)"), so it gets a code of its own.
    code = str(data.get("name") or ("TOOL_ERROR" if "tool_name" in data else message))
    detail = data.get("error") or data.get("message") or message
    return AgentError(str(detail), code=code)


def _add_usage(opened: _Open | None, data: Any) -> None:
    """A model call's tokens and model, added to the nearest agent's own usage."""
    if opened is None or opened.closed:
        return
    usage = getattr(data, "usage", None) or {}
    model = getattr(data, "model", None)
    response = getattr(data, "response", None)
    if model is None and response is not None:
        model = getattr(response, "model", None)
    opened.scope.usage(
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
        model=str(model) if model else None,
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
