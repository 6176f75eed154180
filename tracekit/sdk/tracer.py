"""``AgentTracer``: the one object an agent runtime holds to be observed."""

from __future__ import annotations

import asyncio
import atexit
import contextvars
from collections.abc import Coroutine, Iterable
from types import TracebackType
from typing import Any, TypeVar

from opentelemetry import trace
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace import TracerProvider

from tracekit._version import __version__
from tracekit.events import Call, Kind
from tracekit.sdk.context import current_frame
from tracekit.sdk.guards import Guards
from tracekit.sdk.private_spans import PrivateTracer
from tracekit.sdk.processor import TracekitSpanProcessor
from tracekit.sdk.scopes import Invocation, Run, Step
from tracekit.sdk.sinks import Sink

__all__ = ["AgentTracer"]

T = TypeVar("T")


class AgentTracer:
    """Record agent runs, steps and invocations as OpenTelemetry spans and v1 records.

    Args:
        *sinks: where records go (:class:`~tracekit.sdk.JsonlSink`,
            :class:`~tracekit.sdk.MemorySink`, the store's ``StoreSink``...).
        tracer_provider: an OpenTelemetry SDK ``TracerProvider`` you already
            have; tracekit adds its span processor to it, so your exporters
            see the invocations too. Without one, tracekit makes a private
            provider and leaves the global one alone.
        set_global: also install the provider as OpenTelemetry's global one.
        guards: the checks to enforce on every invocation (none by default:
            an agent's own exceptions then pass through unchanged).
        service: written as ``service`` on every record.
        transfer_spans: also draw each call that names its node as the
            caller's ``execute_tool`` span (GenAI conventions, see
            docs/sdk.md). By default only when others can read the spans: on
            a provider you pass, or with ``set_global``.

    Example:
        >>> from tracekit.sdk import AgentTracer, MemorySink
        >>> sink = MemorySink()
        >>> tk = AgentTracer(sink)
        >>> with tk.run("orchestrator"):
        ...     with tk.step("decide"):
        ...         pass
        ...     with tk.invoke("sql", node="delegate"):
        ...         pass
        >>> [type(e).__name__ for e in sink.events]
        ['RunStart', 'Node', 'Enter', 'Exit', 'RunEnd']
    """

    def __init__(
        self,
        *sinks: Sink,
        tracer_provider: Any = None,
        set_global: bool = False,
        guards: Guards | None = None,
        service: str | None = None,
        transfer_spans: bool | None = None,
    ) -> None:
        private = tracer_provider is None and not set_global
        # A private provider's spans reach no processor at all (the scopes
        # write their own records): the provider's exit hook is replaced by ours.
        provider = (
            tracer_provider
            if tracer_provider is not None
            else TracerProvider(shutdown_on_exit=not private)
        )
        if set_global:
            trace.set_tracer_provider(provider)
        self._otel = provider.get_tracer("tracekit", __version__)
        if private and isinstance(self._otel, SdkTracer):
            # Nobody reads a private provider's spans: keep only their ids (and
            # OTEL_SDK_DISABLED's no-op tracer as it is).
            self._otel = PrivateTracer()
        # A call's execute_tool transfer span (GenAI conventions) is for other
        # OTel backends; a private provider has none, so it would be waste.
        if transfer_spans is None:
            transfer_spans = tracer_provider is not None or set_global
        self._transfer_spans = transfer_spans
        self.guards = guards
        self.processor = TracekitSpanProcessor(sinks, service=service)
        if private:
            atexit.register(self.processor.shutdown)
        elif hasattr(provider, "add_span_processor"):
            provider.add_span_processor(self.processor)

    # -- scopes ----------------------------------------------------------------
    def run(self, agent: str, *, session: str | None = None) -> Run:
        """Open a root run of ``agent`` (``run.start`` ... ``run.end``).

        Args:
            agent: the entry agent's name.
            session: the conversation the run belongs to: ``run.start``'s
                ``session`` and ``gen_ai.conversation.id`` on the run's spans.

        Example:
            >>> from tracekit.sdk import MemorySink
            >>> sink = MemorySink()
            >>> with AgentTracer(sink).run("front_desk", session="conv-42"):
            ...     pass
            >>> sink.events[0].session
            'conv-42'
        """
        return Run(self, agent, session)

    def step(self, name: str, *, call: Call | None = None) -> Step:
        """Open a step of the current run (a ``node`` record).

        Args:
            name: the step's name (a tool's name for a tool call).
            call: ``"tool"`` for a tool call (also an ``execute_tool`` span),
                ``"llm"`` for a model turn (hidden from trees unless asked for).
        """
        return Step(self, name, call)

    def usage(
        self,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
    ) -> None:
        """Record a model call's usage in the current step, run or invocation.

        The tokens and the model add to the current invocation's own usage
        (its ``exit``; a root run's ``run.end``), and to the open step's
        ``node`` if there is one. Outside any run it records nothing.

        Raises:
            ValueError: a count is not a whole number >= 0, or ``model`` is empty.

        Example:
            >>> from tracekit.sdk import MemorySink
            >>> sink = MemorySink()
            >>> tk = AgentTracer(sink)
            >>> with tk.run("desk"), tk.delegate("sql"):
            ...     tk.usage(input_tokens=120, output_tokens=30, model="gpt-x")
            ...     tk.usage(input_tokens=80, output_tokens=10, model="gpt-x")
            >>> sink.events[2].usage
            Usage(inputTokens=200, outputTokens=40, models=['gpt-x'])
        """
        frame = current_frame()
        if frame is None:
            return
        scope = frame.step if frame.step is not None else frame.owner
        if scope is not None:
            scope.usage(input_tokens=input_tokens, output_tokens=output_tokens, model=model)

    def invoke(
        self,
        agent: str,
        *,
        kind: Kind = "delegate",
        node: str | None = None,
        allowed: Iterable[str] | None = None,
    ) -> Invocation:
        """Invoke ``agent`` from the current run: a child run, ``enter``/``exit``.

        Args:
            agent: the agent's name.
            kind: ``delegate`` (the caller waits), ``handoff`` or ``subagent``.
            node: the caller's step that delegates; defaults to the open step.
            allowed: the caller's allow-list; a name outside it is refused
                with ``AGENT_NOT_ALLOWED``.
        """
        return Invocation(self, agent, kind=kind, node=node, allowed=allowed)

    def delegate(
        self, agent: str, *, node: str | None = None, allowed: Iterable[str] | None = None
    ) -> Invocation:
        """Invoke ``agent`` as a delegation (agent-as-tool): the caller waits for it."""
        return Invocation(self, agent, kind="delegate", node=node, allowed=allowed)

    def handoff(
        self, agent: str, *, node: str | None = None, allowed: Iterable[str] | None = None
    ) -> Invocation:
        """Invoke ``agent`` as a handoff: it takes over the conversation."""
        return Invocation(self, agent, kind="handoff", node=node, allowed=allowed)

    def subagent(
        self, agent: str, *, node: str | None = None, allowed: Iterable[str] | None = None
    ) -> Invocation:
        """Invoke ``agent`` as a background subagent (see also :meth:`spawn`)."""
        return Invocation(self, agent, kind="subagent", node=node, allowed=allowed)

    def spawn(
        self,
        agent: str,
        coro: Coroutine[Any, Any, T],
        *,
        node: str | None = None,
        allowed: Iterable[str] | None = None,
    ) -> asyncio.Task[T]:
        """Run ``coro`` as a background subagent in a new task, and return the task.

        The ``enter`` is written now, with the current run as parent; the
        ``exit`` when the task ends, however long after the caller's step.
        Cancelling the task ends the invocation as ``cancelled``. A refusal
        by the guards raises here, before any task exists.

        Example:
            >>> import asyncio
            >>> from tracekit.sdk import MemorySink
            >>> sink = MemorySink()
            >>> tk = AgentTracer(sink)
            >>> async def research(topic):
            ...     return f"notes on {topic}"
            >>> async def main():
            ...     with tk.run("planner"):
            ...         task = tk.spawn("researcher", research("X"), node="fan_out")
            ...         return await task
            >>> asyncio.run(main())
            'notes on X'
            >>> [type(e).__name__ for e in sink.events]
            ['RunStart', 'Enter', 'Exit', 'RunEnd']
            >>> sink.events[1].agent, sink.events[1].kind
            ('researcher', 'subagent')
        """
        inv = self.subagent(agent, node=node, allowed=allowed)
        ctx = contextvars.copy_context()
        try:
            ctx.run(inv.__enter__)
        except BaseException:
            coro.close()
            raise
        started = False

        async def body() -> T:
            nonlocal started
            started = True
            try:
                result = await coro
            except BaseException as exc:
                inv.__exit__(type(exc), exc, exc.__traceback__)
                raise
            inv.__exit__(None, None, None)
            return result

        def never_started(task: asyncio.Task[T]) -> None:
            if not started:  # cancelled before its first step
                coro.close()
                gone = asyncio.CancelledError()
                ctx.run(inv.__exit__, type(gone), gone, None)

        task = asyncio.get_running_loop().create_task(body(), context=ctx)
        task.add_done_callback(never_started)
        return task

    # -- lifecycle -------------------------------------------------------------
    def flush(self) -> None:
        """Flush every sink (never raises)."""
        self.processor.flush()

    def close(self) -> None:
        """Flush and close every sink (never raises); later records are dropped."""
        self.processor.close()
        self.processor.sinks = ()

    def __enter__(self) -> AgentTracer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
