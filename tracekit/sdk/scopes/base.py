"""What a run, a step and an invocation share: the ``Scope`` base and its span plumbing.

A scope is a context manager, an async context manager and a decorator in
one; it starts and ends its OpenTelemetry span with itself parked in the
span processor's slot, so the processor asks it for its v1 record.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from tracekit.errors import AgentError, AgentPendingError, AgentRecursionError
from tracekit.events import ErrorInfo, Event, Status, Usage
from tracekit.sdk import attributes as A
from tracekit.sdk.context import _CURRENT, Frame
from tracekit.sdk.errorinfo import encode_error, error_info
from tracekit.sdk.guards import Guards
from tracekit.sdk.processor import TracekitSpanProcessor
from tracekit.sdk.usage import UsageTally

__all__ = ["Scope", "TracerLike"]

F = TypeVar("F", bound=Callable[..., Any])
_in_context: Final = trace.set_span_in_context
_RUNTIME: Final = getattr(otel_context, "_RUNTIME_CONTEXT", None)
# An int: int / int is correctly rounded; int / 1e6 first rounds the
# nanoseconds to a float (they exceed 2**53) and can be 1 ulp off.
_NS_PER_MS: Final = 1_000_000


class TracerLike(Protocol):
    """What a scope reads of the tracer that opened it (:class:`tracekit.sdk.tracer.AgentTracer`).

    The tracer opens scopes, so the scopes name only what they read of it and
    never import it: the two would import each other.
    """

    @property
    def processor(self) -> TracekitSpanProcessor: ...
    @property
    def guards(self) -> Guards | None: ...
    @property
    def _otel(self) -> Any: ...
    @property
    def _transfer_spans(self) -> bool: ...


class Scope:
    """What a run, a step and an invocation share.

    Each is a context manager, an async context manager and a decorator in one.

    Integrations (:mod:`tracekit.sdk.integrations.lovia`) hold a scope open across
    a framework's callbacks with :meth:`__enter__` and :meth:`__exit__`.
    """

    _tk: TracerLike
    processor: TracekitSpanProcessor
    _span: Any
    _start_ns: int
    _trace_id: str | None
    _tokens: tuple[object, contextvars.Token[Frame | None]]
    status: Status = "ok"
    error: ErrorInfo | None = None
    _tally: UsageTally | None = None
    _usage_out: Usage | None = None

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

    # -- model usage -------------------------------------------------------
    def usage(
        self,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
    ) -> None:
        """Record one model call's usage; the sums go on this scope's end record.

        An invocation's ``exit`` and a run's ``run.end`` carry their own usage
        (not their children's); a step's goes on its ``node`` and on the run
        or invocation it belongs to.

        Raises:
            ValueError: a count is not a whole number >= 0, or ``model`` is empty.
        """
        tally = self._tally
        if tally is None:
            tally = self._tally = UsageTally()
        tally.add(input_tokens, output_tokens, model)

    def _own_usage(self) -> Usage | None:
        """The usage for the end record; its span gets the same as attributes."""
        tally = self._tally
        if tally is None:
            return None
        self._span.set_attributes(tally.attributes())
        return tally.usage()

    # -- records (asked for by the span processor) ---------------------------
    def start_event(self, start_ns: int, trace_id: int, service: str | None) -> Event | None:
        self._start_ns = start_ns
        self._trace_id = _trace_hex(trace_id)
        return None

    def end_event(self, end_ns: int, service: str | None) -> Event | None:
        return None

    # -- span plumbing shared by the scopes ------------------------------------
    def _attributes(self) -> dict[str, Any]:
        """The span's attributes, asked for only when the span records them."""
        raise NotImplementedError

    def _start(self, name: str, under: Any = None) -> None:
        """Start this scope's span, in the current context or ``under`` the span given.

        The record is written here, once the span exists, rather than from a
        span processor's ``on_start``: no hand-over through a thread-local
        slot, and unsampled spans take the same road.
        """
        tk = self._tk
        context = _in_context(under) if under is not None else None
        span = self._span = tk._otel.start_span(name, context)
        if span.is_recording():
            _put_attributes(span, self._attributes())
            start_ns = getattr(span, "start_time", None) or time.time_ns()
        else:  # a non-recording span has no clock (and keeps no attributes)
            start_ns = time.time_ns()
        self.processor.record_start(self, start_ns, span.get_span_context().trace_id)

    def _end(self) -> None:
        span = self._span
        span.end()
        self.processor.record_end(self, _end_ns(span))

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


def _end_ns(span: Any) -> int:
    """When the span ended: the SDK span's own clock, else now (a non-recording span)."""
    # getattr with a default: a missing attribute raises no exception to catch
    return getattr(span, "end_time", None) or time.time_ns()


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
    if _RUNTIME is None:
        return otel_context.attach(_in_context(span)), _CURRENT.set(frame)
    return _RUNTIME.attach(_in_context(span)), _CURRENT.set(frame)


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


def _is_recursion(exc: BaseException) -> bool:
    return isinstance(exc, AgentError) and exc.code == AgentRecursionError.code


def _status_of(exc: BaseException) -> Status:
    if isinstance(exc, AgentPendingError):
        return "pending"
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    return "error"
