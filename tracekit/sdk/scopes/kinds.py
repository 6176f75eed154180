"""The three scopes: a root run, a step, an agent invocation.

Each is a context manager (``with`` and ``async with``) and a decorator (for
plain and ``async`` functions; every call gets a fresh scope). Each is an
OpenTelemetry span (a non-recording one on tracekit's private provider, which
nobody reads: :mod:`tracekit.sdk.private_spans`), and knows the v1 record it
stands for: the span processor asks it for that record as the span starts
and ends. What they share is :class:`~tracekit.sdk.scopes.base.Scope`.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import Any, Final

from tracekit.errors import AgentFailedError
from tracekit.events import Call, Enter, ErrorInfo, Event, Exit, Kind, Node, RunEnd, RunStart
from tracekit.sdk import attributes as A
from tracekit.sdk.context import _CURRENT, Frame, new_ids
from tracekit.sdk.guards import check_call
from tracekit.sdk.scopes.base import (
    _NS_PER_MS,
    Scope,
    TracerLike,
    _end_ns,
    _enter_context,
    _is_recursion,
    _leave_context,
    _put_attributes,
    _status_of,
    _trace_hex,
)
from tracekit.sdk.transfer import end_transfer, transfer_span

__all__ = ["Invocation", "Run", "Scope", "Step"]

#: run.end's error code for a run that was cancelled (the fleet rules' ``cancelled``).
CANCELLED: Final = "CANCELLED"


class Run(Scope):
    """A root run: ``run.start`` when it opens, ``run.end`` when it closes.

    The run's exception, if any, leaves unchanged; ``run.end`` says
    ``failure: "delegation"`` for a recursion refusal, ``"agent"`` otherwise.
    """

    failure: Any = None

    def __init__(self, tk: TracerLike, agent: str, session: str | None = None) -> None:
        self._tk = tk
        self.processor = tk.processor
        self.agent = agent
        self.session = session
        self.run_id = ""

    def _fresh(self) -> Run:
        return Run(self._tk, self.agent, self.session)

    def __enter__(self) -> Run:
        self.run_id = new_ids()[0]
        self.status, self.error, self.failure, self._tally = "ok", None, None, None
        self._start(f"invoke_agent {self.agent}")
        frame = Frame(self.run_id, (self.agent,), 0, "", None, self.session, self)
        self._tokens = _enter_context(self._span, frame)
        return self

    def _attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            A.OPERATION: A.INVOKE_AGENT,
            A.AGENT_NAME: self.agent,
            A.RUN_ID: self.run_id,
            A.ROOT: True,
        }
        if self.session is not None:
            attrs[A.CONVERSATION_ID] = self.session
        return attrs

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
            elif status == "cancelled":  # run.end has no status: the error's code says it
                self.error = ErrorInfo(code=CANCELLED, message=str(exc) or "cancelled")
        self._usage_out = self._own_usage()
        self._end()

    def start_event(self, start_ns: int, trace_id: int, service: str | None) -> Event:
        self._start_ns, self._trace_id = start_ns, _trace_hex(trace_id)
        return RunStart(
            ts=start_ns / _NS_PER_MS,
            service=service,
            traceId=self._trace_id,
            runId=self.run_id,
            agent=self.agent,
            session=self.session,
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
            usage=self._usage_out,
        )


class Step(Scope):
    """A step of the current run, written as a ``node`` record when it ends.

    The record is dated when the step began. A step that delegates (an
    invocation opened inside it) is shown by its invocations
    (``escalate -> refunds``), so it writes no ``node`` of its own. Outside
    any run a step records nothing.
    """

    _owner: Scope | None = None

    def __init__(self, tk: TracerLike, name: str, call: Call | None = None) -> None:
        self._tk = tk
        self.processor = tk.processor
        self.name = name
        self.call = call
        self.delegated = False
        self._run_id = ""
        self._id = ""

    def _fresh(self) -> Step:
        return Step(self._tk, self.name, self.call)

    def __enter__(self) -> Step:
        parent = _CURRENT.get()
        self._active = parent is not None
        if parent is None:
            return self
        self._tally, self._owner = None, parent.owner
        self._run_id, self._id = parent.run_id, parent.prefix + self.name
        self._session = parent.session
        self._start(self.name)
        frame = Frame(
            parent.run_id,
            parent.chain,
            parent.depth,
            parent.prefix,
            self,
            parent.session,
            self._owner,
        )
        self._tokens = _enter_context(self._span, frame)
        return self

    def _attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {A.RUN_ID: self._run_id, A.STEP: self._id}
        if self.call is not None:
            attrs[A.CALL] = self.call
            if self.call == "tool":
                attrs[A.OPERATION], attrs[A.TOOL_NAME] = A.EXECUTE_TOOL, self.name
        if self._session is not None:
            attrs[A.CONVERSATION_ID] = self._session
        return attrs

    def usage(
        self,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
    ) -> None:
        """Record a model call of this step: on its ``node``, and on its run's own usage."""
        if not self._active:
            return
        super().usage(input_tokens=input_tokens, output_tokens=output_tokens, model=model)
        if self._owner is not None:
            self._owner.usage(input_tokens=input_tokens, output_tokens=output_tokens, model=model)

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
        self._usage_out = self._own_usage()
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
            call=self.call,
            error=self.error,
            usage=self._usage_out,
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
        tk: TracerLike,
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
        self._transfer: Any = None

    def _fresh(self) -> Invocation:
        return Invocation(
            self._tk, self.agent, kind=self.kind, node=self._node_arg, allowed=self.allowed
        )

    def mark_pending(self) -> None:
        """End this invocation as ``pending`` (waiting for an approval) when it closes."""
        self.status = "pending"

    def __enter__(self) -> Invocation:
        self.status, self.error = "ok", None  # a scope object may be entered again
        self._tally = self._usage_out = None
        parent = _CURRENT.get()
        self.node = node = self._node_in(parent)
        self.run_id, self.invocation_id = new_ids()
        chain: tuple[str, ...]
        session = None
        if parent is None:
            chain, depth, prefix = (), 1, ""
            self.parent_run_id = None
        else:
            chain, depth, prefix = parent.chain, parent.depth + 1, parent.prefix
            self.parent_run_id = parent.run_id
            session = parent.session
        self._session = session
        refusal = None
        if self._tk.guards is not None or self.allowed is not None:
            refusal = check_call(self._tk.guards, self.agent, chain, depth, self.allowed)
        under = None
        if node is not None and parent is not None and self._tk._transfer_spans:
            under = self._transfer = self._start_transfer(parent, node)
        self._start(self._span_name, under)
        if refusal is not None:
            self._fail("refused", refusal)
            self._end()
            raise refusal
        prefix += f"{node}/{self.agent}/" if node else f"{self.agent}/"
        frame = Frame(self.run_id, (*chain, self.agent), depth, prefix, None, session, self)
        self._tokens = _enter_context(self._span, frame)
        return self

    def _attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            A.OPERATION: A.INVOKE_AGENT,
            A.AGENT_NAME: self.agent,
            A.RUN_ID: self.run_id,
            A.INVOCATION_ID: self.invocation_id,
            A.KIND: self.kind,
        }
        if self.parent_run_id is not None:
            attrs[A.PARENT_RUN_ID] = self.parent_run_id
        if self._session is not None:
            attrs[A.CONVERSATION_ID] = self._session
        if self.node is not None:
            attrs[A.NODE] = self.node
        return attrs

    def _start_transfer(self, caller: Frame, node: str) -> Any:
        """The caller's ``execute_tool`` span (GenAI transfer), the invocation's parent span.

        Only a call that names its node has one: the node is the tool that
        called. Without a node the invocation is simply the caller's child.
        """
        name, attrs = transfer_span(caller, self.agent, self.kind, node)
        span = self._tk._otel.start_span(name)
        if span.is_recording():
            _put_attributes(span, attrs)
        return span

    def _end(self) -> None:
        span = self._span  # Scope._end, inlined: this is the hot path
        span.end()
        self.processor.record_end(self, _end_ns(span))
        transfer, self._transfer = self._transfer, None
        if transfer is not None:
            end_transfer(transfer, self.status, self.error)

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
            if self._tally is not None:
                self._usage_out = self._own_usage()
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
        self._usage_out = self._own_usage()
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
        # The constructor (it checks the depth of an error's causes) costs
        # less than a copy of a template with its fields replaced.
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
            usage=self._usage_out,
        )
