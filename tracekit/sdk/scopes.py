"""The three scopes: a root run, a step, an agent invocation.

Each is a context manager (``with`` and ``async with``) and a decorator (for
plain and ``async`` functions; every call gets a fresh scope). Each is a real
OpenTelemetry span, and knows the v1 record it stands for: the span
processor asks it for that record as the span starts and ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from tracekit.errors import AgentError, AgentFailedError, AgentPendingError, AgentRecursionError
from tracekit.events import Enter, ErrorInfo, Event, Exit, Kind, Node, RunEnd, RunStart, Status
from tracekit.sdk import attributes as A
from tracekit.sdk.context import _CURRENT, Frame, new_ids
from tracekit.sdk.errorinfo import encode_error, error_info
from tracekit.sdk.guards import check_call
from tracekit.sdk.processor import PENDING, TracekitSpanProcessor

if TYPE_CHECKING:
    from tracekit.sdk.tracer import AgentTracer

__all__ = ["Invocation", "Run", "Scope", "Step"]

F = TypeVar("F", bound=Callable[..., Any])
_in_context: Final = trace.set_span_in_context
_RUNTIME: Final = getattr(otel_context, "_RUNTIME_CONTEXT", None)
# An int: int / int is correctly rounded; int / 1e6 first rounds the
# nanoseconds to a float (they exceed 2**53) and can be 1 ulp off.
_NS_PER_MS: Final = 1_000_000


class Scope:
    """What a run, a step and an invocation share.

    Each is a context manager, an async context manager and a decorator in one.

    Integrations (:mod:`tracekit.sdk.integrations.lovia`) hold a scope open across
    a framework's callbacks with :meth:`__enter__` and :meth:`__exit__`.
    """

    _tk: AgentTracer
    processor: TracekitSpanProcessor
    _span: Any
    _start_ns: int
    _trace_id: str | None
    _tokens: tuple[object, contextvars.Token[Frame | None]]
    status: Status = "ok"
    error: ErrorInfo | None = None

    def _fresh(self) -> Scope:
        raise NotImplementedError

    def __enter__(self) -> Any:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Any:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self._fresh():
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    # -- records (asked for by the span processor) ---------------------------
    def start_event(self, start_ns: int, trace_id: int, service: str | None) -> Event | None:
        self._start_ns = start_ns
        self._trace_id = _trace_hex(trace_id)
        return None

    def end_event(self, end_ns: int, service: str | None) -> Event | None:
        return None

    # -- span plumbing shared by the scopes ------------------------------------
    def _start(self, name: str, attrs: dict[str, Any]) -> None:
        tk = self._tk
        PENDING.scope = self
        try:
            span = tk._otel.start_span(name)
        finally:
            PENDING.scope = None
        self._span = span
        if span.is_recording():
            _put_attributes(span, attrs)
        else:  # a sampler dropped the span: write the record ourselves
            trace_id = span.get_span_context().trace_id
            tk.processor.record_start(self, time.time_ns(), trace_id)

    def _end(self) -> None:
        span = self._span
        if span.is_recording():
            PENDING.scope = self
            try:
                span.end()
            finally:
                PENDING.scope = None
        else:
            self._tk.processor.record_end(self, time.time_ns())

    def _fail(self, status: Status, exc: BaseException) -> None:
        span = self._span
        self.status = status
        span.set_attribute(A.STATUS, status)
        if status == "cancelled":  # the status says it all; no error to look into
            return
        info = self.error = error_info(exc)
        span.set_attribute(A.ERROR, encode_error(info))
        span.set_attribute(A.ERROR_TYPE, info.code)
        span.set_status(StatusCode.ERROR, str(exc) or info.code)


def _put_attributes(span: Any, attrs: dict[str, Any]) -> None:
    """Set span attributes that are already valid (strings and bools).

    OpenTelemetry validates every value under a lock, which costs more than
    the rest of an invocation; ours need no validation, so they go straight
    into the span's map when it has the expected shape.
    """
    try:
        bounded = span._attributes
        if bounded.maxlen is None or len(bounded._dict) + len(attrs) <= bounded.maxlen:
            bounded._dict.update(attrs)
            return
    except AttributeError:  # not the SDK's span as we know it: the public way
        pass
    span.set_attributes(attrs)


def _trace_hex(trace_id: int) -> str | None:
    """The trace id as hex; every invocation of a run shares one, so keep the last."""
    global _last_trace
    last_id, last_hex = _last_trace
    if trace_id == last_id:
        return last_hex
    text = format(trace_id, "032x") if trace_id else None
    _last_trace = (trace_id, text)
    return text


_last_trace: tuple[int, str | None] = (0, None)


def _enter_context(span: Any, frame: Frame) -> tuple[object, contextvars.Token[Frame | None]]:
    return otel_context.attach(_in_context(span)), _CURRENT.set(frame)


def _leave_context(tokens: tuple[object, contextvars.Token[Frame | None]]) -> None:
    otel_token, frame_token = tokens
    # Tokens belong to the context they were made in; a scope closed from
    # another context (a generator finalised elsewhere) has nothing to undo.
    try:  # noqa: SIM105 (suppress() costs a generator on the hot path)
        _CURRENT.reset(frame_token)
    except ValueError:
        pass
    if _RUNTIME is None:
        otel_context.detach(otel_token)  # type: ignore[arg-type]
        return
    # The public detach logs a traceback for a foreign token, which is
    # expected here (see above): go to the runtime context directly.
    try:  # noqa: SIM105 (as above)
        _RUNTIME.detach(otel_token)
    except ValueError:
        pass


class Run(Scope):
    """A root run: ``run.start`` when it opens, ``run.end`` when it closes.

    The run's exception, if any, leaves unchanged; ``run.end`` says
    ``failure: "delegation"`` for a recursion refusal, ``"agent"`` otherwise.
    """

    failure: Any = None

    def __init__(self, tk: AgentTracer, agent: str) -> None:
        self._tk = tk
        self.processor = tk.processor
        self.agent = agent
        self.run_id = ""

    def _fresh(self) -> Run:
        return Run(self._tk, self.agent)

    def __enter__(self) -> Run:
        self.run_id = new_ids()[0]
        attrs = {
            A.OPERATION: A.INVOKE_AGENT,
            A.AGENT_NAME: self.agent,
            A.RUN_ID: self.run_id,
            A.ROOT: True,
        }
        self._start(f"invoke_agent {self.agent}", attrs)
        self._tokens = _enter_context(self._span, Frame(self.run_id, (self.agent,), 0, ""))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _leave_context(self._tokens)
        if exc is not None:
            status = _status_of(exc)
            self._fail(status, exc)
            if status == "error":
                self.failure = "delegation" if _is_recursion(exc) else "agent"
                self._span.set_attribute(A.FAILURE, self.failure)
        self._end()

    def start_event(self, start_ns: int, trace_id: int, service: str | None) -> Event:
        self._start_ns, self._trace_id = start_ns, _trace_hex(trace_id)
        return RunStart(
            ts=start_ns / _NS_PER_MS,
            service=service,
            traceId=self._trace_id,
            runId=self.run_id,
            agent=self.agent,
        )

    def end_event(self, end_ns: int, service: str | None) -> Event:
        return RunEnd(
            ts=end_ns / _NS_PER_MS,
            service=service,
            traceId=self._trace_id,
            runId=self.run_id,
            ok=self.status == "ok",
            durationMs=(end_ns - self._start_ns) / _NS_PER_MS,
            failure=self.failure,
            error=self.error,
        )


class Step(Scope):
    """A step of the current run, written as a ``node`` record when it ends.

    The record is dated when the step began. A step that delegates (an
    invocation opened inside it) is shown by its invocations
    (``escalate -> refunds``), so it writes no ``node`` of its own. Outside
    any run a step records nothing.
    """

    def __init__(self, tk: AgentTracer, name: str) -> None:
        self._tk = tk
        self.processor = tk.processor
        self.name = name
        self.delegated = False
        self._run_id = ""
        self._id = ""

    def _fresh(self) -> Step:
        return Step(self._tk, self.name)

    def __enter__(self) -> Step:
        parent = _CURRENT.get()
        self._active = parent is not None
        if parent is None:
            return self
        self._run_id, self._id = parent.run_id, parent.prefix + self.name
        self._start(self.name, {A.RUN_ID: self._run_id, A.STEP: self._id})
        frame = Frame(parent.run_id, parent.chain, parent.depth, parent.prefix, self)
        self._tokens = _enter_context(self._span, frame)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._active:
            return
        _leave_context(self._tokens)
        if self.delegated:
            self._span.set_attribute(A.DELEGATED, True)
        if exc is not None:
            self._fail(_status_of(exc), exc)
        self._end()

    def end_event(self, end_ns: int, service: str | None) -> Event | None:
        if self.delegated:
            return None
        return Node(
            ts=self._start_ns / _NS_PER_MS,
            service=service,
            traceId=self._trace_id,
            runId=self._run_id,
            id=self._id,
            ok=self.status == "ok",
            durationMs=(end_ns - self._start_ns) / _NS_PER_MS,
        )


class Invocation(Scope):
    """One agent invocation: ``enter`` when it starts, ``exit`` when it ends.

    Attributes:
        agent: the agent's name.
        kind: ``delegate``, ``handoff`` or ``subagent``.
        run_id: the child run this invocation opens (set on entry).
        invocation_id: this invocation's id (set on entry).
        parent_run_id: the caller's run, None at the top.
        status: how it ended (``ok`` until it ends otherwise).
    """

    def __init__(
        self,
        tk: AgentTracer,
        agent: str,
        *,
        kind: Kind = "delegate",
        node: str | None = None,
        allowed: Iterable[str] | None = None,
    ) -> None:
        self._tk = tk
        self.processor = tk.processor
        self.agent = agent
        self.kind = kind
        self.node = self._node_arg = node
        self.allowed = frozenset(allowed) if allowed is not None else None
        self._span_name = f"invoke_agent {agent}"
        self.run_id = ""
        self.invocation_id = ""
        self.parent_run_id: str | None = None

    def _fresh(self) -> Invocation:
        return Invocation(
            self._tk, self.agent, kind=self.kind, node=self._node_arg, allowed=self.allowed
        )

    def mark_pending(self) -> None:
        """End this invocation as ``pending`` (waiting for an approval) when it closes."""
        self.status = "pending"

    def __enter__(self) -> Invocation:
        self.status, self.error = "ok", None  # a scope object may be entered again
        parent = _CURRENT.get()
        self.node = node = self._node_in(parent)
        self.run_id, self.invocation_id = new_ids()
        attrs: dict[str, Any] = {
            A.OPERATION: A.INVOKE_AGENT,
            A.AGENT_NAME: self.agent,
            A.RUN_ID: self.run_id,
            A.INVOCATION_ID: self.invocation_id,
            A.KIND: self.kind,
        }
        chain: tuple[str, ...]
        if parent is None:
            chain, depth, prefix = (), 1, ""
        else:
            chain, depth, prefix = parent.chain, parent.depth + 1, parent.prefix
            self.parent_run_id = attrs[A.PARENT_RUN_ID] = parent.run_id
        if node is not None:
            attrs[A.NODE] = node
        refusal = None
        if self._tk.guards is not None or self.allowed is not None:
            refusal = check_call(self._tk.guards, self.agent, chain, depth, self.allowed)
        self._start(self._span_name, attrs)
        if refusal is not None:
            self._fail("refused", refusal)
            self._end()
            raise refusal
        prefix += f"{node}/{self.agent}/" if node else f"{self.agent}/"
        frame = Frame(self.run_id, (*chain, self.agent), depth, prefix)
        self._tokens = _enter_context(self._span, frame)
        return self

    def _node_in(self, parent: Frame | None) -> str | None:
        """The caller's node: as given, else the open step (which then delegated)."""
        node = self._node_arg
        step = parent.step if parent is not None else None
        if step is not None:
            if node is None:
                node = step.name
            if node == step.name:
                step.delegated = True
        return node

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _leave_context(self._tokens)
        if exc is None:
            if self.status != "ok":
                self._span.set_attribute(A.STATUS, self.status)
            self._end()
            return
        status = _status_of(exc)
        wrapper = None
        guards = self._tk.guards
        wrap = status == "error" and guards is not None and guards.wrap_failures
        if wrap and isinstance(exc, Exception) and not _is_recursion(exc):
            wrapper = AgentFailedError(f"agent {self.agent!r} failed")
            wrapper.__cause__ = exc
        self._fail(status, wrapper or exc)
        self._end()
        if wrapper is not None:
            raise wrapper from exc

    def start_event(self, start_ns: int, trace_id: int, service: str | None) -> Event:
        self._start_ns, self._trace_id = start_ns, _trace_hex(trace_id)
        return Enter(
            ts=start_ns / _NS_PER_MS,
            service=service,
            traceId=self._trace_id,
            invocationId=self.invocation_id,
            runId=self.run_id,
            parentRunId=self.parent_run_id,
            agent=self.agent,
            node=self.node,
            kind=self.kind,
        )

    def end_event(self, end_ns: int, service: str | None) -> Event:
        return Exit(
            ts=end_ns / _NS_PER_MS,
            service=service,
            traceId=self._trace_id,
            invocationId=self.invocation_id,
            runId=self.run_id,
            parentRunId=self.parent_run_id,
            agent=self.agent,
            node=self.node,
            ok=self.status == "ok",
            status=self.status,
            durationMs=(end_ns - self._start_ns) / _NS_PER_MS,
            error=self.error,
        )


def _is_recursion(exc: BaseException) -> bool:
    return isinstance(exc, AgentError) and exc.code == AgentRecursionError.code


def _status_of(exc: BaseException) -> Status:
    if isinstance(exc, AgentPendingError):
        return "pending"
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    return "error"
