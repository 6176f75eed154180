"""tracekit for lovia: a ``Tracer`` that turns lovia's spans into tracekit records.

Install with ``pip install 'tracekit-agents[lovia]'`` and pass the tracer to a run::

    from lovia import Runner
    from tracekit import AgentTracer, JsonlSink
    from tracekit.sdk.integrations.lovia import LoviaTracer

    tracer = LoviaTracer(AgentTracer(JsonlSink("run.jsonl")))
    result = await Runner.run(triage, "I was charged twice.", tracer=tracer)

lovia emits ``run``, ``model_call``, ``tool_call`` and ``handoff`` spans with no
parent link; the parent is whatever tracekit run is current in the context
variable, plus the tool call open around it (kept in this module's own
context variable). The mapping:

* ``run``: a root run, or, inside another run, an invocation of that agent.
  Inside an ``ask_<name>`` tool call (``Agent.as_tool``) it is a ``delegate``
  whose node is the tool; inside ``spawn_subagent`` a ``subagent``, which ends
  after the tool call has.
* ``tool_call``: a step named after the tool; ``transfer_to_<name>`` is not a
  step but the node of the handoff that follows it.
* ``handoff``: the run keeps going as the target agent, so the target becomes
  a ``handoff`` invocation that stays open until the run ends: everything
  after it shows under it.
* ``model_call``: no step; its model joins the current agent's own
  ``usage.models``.
* a run ended by ``RunCancelled`` (``cancel_subagent``, the run's teardown,
  a tripped cancel token) is ``cancelled``, not an error.

The adapter does not import lovia: the ``Tracer`` protocol is structural.
"""

from __future__ import annotations

import asyncio
import contextvars
from contextlib import suppress
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final

from tracekit.sdk import AgentTracer, Invocation, Scope, current_frame

__all__ = ["LoviaTracer"]

SPAWN: Final = "spawn_subagent"
TRANSFER_PREFIX: Final = "transfer_to_"


@dataclass
class _RunState:
    """What one lovia run shares between its spans, across tasks."""

    handoffs: list[Invocation] = field(default_factory=list)
    last_transfer: str | None = None


_RUN: Final[contextvars.ContextVar[_RunState | None]] = contextvars.ContextVar(
    "tracekit_lovia_run", default=None
)
_TOOL: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "tracekit_lovia_tool", default=None
)


class LoviaTracer:
    """lovia's ``Tracer`` protocol, writing tracekit records through an ``AgentTracer``.

    Args:
        tracer: the ``AgentTracer`` whose sinks and OpenTelemetry provider
            receive the records and spans. Its guards must not wrap failures:
            lovia's own exceptions (``RunCancelled`` above all) must reach lovia
            unchanged.

    Raises:
        ValueError: the tracer's guards wrap failures.
    """

    def __init__(self, tracer: AgentTracer) -> None:
        if tracer.guards is not None and tracer.guards.wrap_failures:
            raise ValueError(
                "LoviaTracer needs Guards(wrap_failures=False): lovia's own "
                "exceptions must reach lovia unchanged"
            )
        self.tracer = tracer

    def span(self, name: str, /, **attributes: object) -> _Span:
        """Open the span lovia asks for (used as ``with tracer.span(...) as s``)."""
        if name == "run":
            return _RunSpan(self.tracer, attributes)
        if name == "tool_call":
            return _ToolSpan(self.tracer, attributes)
        if name == "handoff":
            return _HandoffSpan(self.tracer, attributes)
        if name == "model_call" and attributes.get("model"):
            # lovia names the model per call but gives no per-call tokens (its
            # run's total folds in the children's): the model goes on the
            # current agent's own usage.
            self.tracer.usage(model=str(attributes["model"]))
        return _Span(self.tracer, attributes)


class _Span:
    """A span lovia holds: attributes go to the OpenTelemetry span, if any."""

    _scope: Scope | None = None

    def __init__(self, tk: AgentTracer, attributes: dict[str, object]) -> None:
        self._tk = tk
        self._attrs = attributes
        self._recorded: BaseException | None = None

    def set_attribute(self, key: str, value: object) -> None:
        span = getattr(self._scope, "_span", None)
        if span is not None and isinstance(value, (str, bool, int, float)):
            span.set_attribute(f"lovia.{key}", value)

    def record_exception(self, exc: BaseException) -> None:
        self._recorded = exc

    def __enter__(self) -> _Span:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def _close(self, scope: Scope, exc: BaseException | None) -> None:
        """Close ``scope`` with the exception lovia raised, or the one it recorded.

        lovia's ``RunCancelled`` (a tripped cancel token: ``cancel_subagent``,
        or the run's teardown) is a cancellation, not a failure: the scope
        ends ``cancelled``, so a parent that cancelled its subagent on purpose
        is not degraded by it.
        """
        exc = exc or self._recorded
        if exc is not None and _is_run_cancelled(exc):
            cancelled = asyncio.CancelledError(str(exc))
            cancelled.__cause__ = exc
            exc = cancelled
        scope.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)


class _RunSpan(_Span):
    def __enter__(self) -> _RunSpan:
        agent = str(self._attrs.get("agent", "agent"))
        tool = _TOOL.get()
        scope: Scope
        if current_frame() is None:
            scope = self._tk.run(agent)
        elif tool == SPAWN:
            scope = self._tk.subagent(agent, node=tool)
        else:
            scope = self._tk.delegate(agent, node=tool)
        scope.__enter__()
        self._scope = scope
        self._tokens = (_RUN.set(_RunState()), _TOOL.set(None))
        if "run_id" in self._attrs:
            self.set_attribute("run_id", self._attrs["run_id"])
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        state = _RUN.get()
        # The agents handed over to ran until the run's end: close them first,
        # innermost first, as the run itself ended.
        for handoff in reversed(state.handoffs if state is not None else []):
            self._close(handoff, exc)
        run_token, tool_token = self._tokens
        _safe_reset(_TOOL, tool_token)
        _safe_reset(_RUN, run_token)
        assert self._scope is not None
        self._close(self._scope, exc)


class _ToolSpan(_Span):
    def __enter__(self) -> _ToolSpan:
        name = str(self._attrs.get("name", "tool"))
        state = _RUN.get()
        if name.startswith(TRANSFER_PREFIX):
            if state is not None:
                state.last_transfer = name
        elif name != SPAWN:
            self._scope = self._tk.step(name)
            self._scope.__enter__()
        self._token = _TOOL.set(name)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _safe_reset(_TOOL, self._token)
        if self._scope is not None:
            self._close(self._scope, exc)


class _HandoffSpan(_Span):
    def __enter__(self) -> _HandoffSpan:
        target = str(self._attrs.get("to_agent", "agent"))
        state = _RUN.get()
        node = state.last_transfer if state is not None else None
        inv = self._tk.handoff(target, node=node or f"{TRANSFER_PREFIX}{target}")
        inv.__enter__()
        self._scope = inv
        if state is not None:
            state.last_transfer = None
            state.handoffs.append(inv)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        state = _RUN.get()
        assert isinstance(self._scope, Invocation)
        if exc is None and state is not None:
            return  # the target now runs until the run ends
        # The handoff failed (lovia rolls it back), or there is no run to end it.
        if state is not None and self._scope in state.handoffs:
            state.handoffs.remove(self._scope)
        self._close(self._scope, exc)


def _is_run_cancelled(exc: BaseException) -> bool:
    """Is it lovia's ``RunCancelled`` (or a subclass)? By name: this module never imports lovia."""
    return any(
        cls.__name__ == "RunCancelled" and cls.__module__.split(".")[0] == "lovia"
        for cls in type(exc).__mro__
    )


def _safe_reset(var: contextvars.ContextVar[Any], token: contextvars.Token[Any]) -> None:
    # Closed from another context: nothing of ours to undo there.
    with suppress(ValueError):
        var.reset(token)
