"""The steps of an agent's run: its tool calls, its model turns, its own spans.

Frameworks wrap an agent's tool calls in model turns (``turn`` spans), loop
cycles (``execute_event_loop_cycle``) or chains (a graph's ``agent``/``tools``
nodes). Those wrappers are neither steps nor
nodes (:func:`~tracekit.intake.otlp.kinds.is_container`): the tool calls
and model calls inside them belong to the agent, so a tool that raised is
seen. A tool call becomes ``Node(call="tool")`` named by the tool, with its
``ok`` and ``error``; a model call becomes ``Node(call="llm")`` with its
usage (trees hide those unless asked); any other span right under an agent
is a plain step, and what it nests is part of it.

Example:
    >>> own_error(Span("t", "a", "", "x", 1, 2, {}, True, "boom", None, "ValueError"))
    ErrorInfo(code='ValueError', message='boom', chain=None, cause=None, type=None)
"""

from __future__ import annotations

import ast
import json
import re
from typing import Final

import msgspec

from tracekit.events import ErrorInfo, Node, Usage, check_error
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import CONTROL_FLOW_KEY, is_control_flow
from tracekit.intake.otlp.kinds import (
    is_container,
    is_llm,
    sum_usage,
    tool_name,
    usage_of,
)
from tracekit.intake.otlp.spans import Key, SpanIndex

__all__ = ["Steps", "own_error", "short_code"]

_NS_PER_MS: Final = 1_000_000
_ERROR_DECODER: Final = msgspec.json.Decoder(ErrorInfo)
_CODE_CHARS: Final = 80
#: A structured status message is read for the message it holds up to this size.
_STRUCTURED_CHARS: Final = 4096
#: Where a structured status message holds its message, in order.
_HELD_KEYS: Final = ("message", "error", "type")
_DOTTED: Final = re.compile(r"[A-Za-z_][\w<>]*(?:\.[A-Za-z_][\w<>]*)+")
#: What tracekit's SDK writes of a span's outcome (own_error reads them first).
_WRITTEN: Final = frozenset({"tracekit.error", "tracekit.status"})


def own_error(span: Span) -> ErrorInfo | None:
    """A span's own error: ``tracekit.error``, an ERROR status, or an exception event.

    An exception event is a failure even with the status left unset and no
    ``error.type`` (processors that mark every span OK). An exception a
    dialect lists as control flow is none, whatever the status says
    (:mod:`tracekit.intake.otlp.dialects`).
    """
    written = span.attrs.get("tracekit.error")
    if isinstance(written, str) and written:
        try:
            error: ErrorInfo = _ERROR_DECODER.decode(written)
            check_error(error)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            return ErrorInfo(code=_code(span), message=written)  # not one of ours: keep its text
        return error
    status = span.attrs.get("tracekit.status")
    if status is not None:
        if status == "ok":
            return None
    elif CONTROL_FLOW_KEY in span.attrs or (
        not span.error and (span.exception is None or is_control_flow(span.exception))
    ):
        return None
    code = _code(span)
    short = short_code(code)
    return ErrorInfo(
        code=short,
        message=span.message or span.exception_message or "",
        type=code if short != code else None,
    )


def short_code(code: str) -> str:
    """One code per exception class: a dotted class path's last name.

    ``error.type`` is often the qualified name (``__main__.RefundTimeout``)
    while the exception event and other runtimes say ``RefundTimeout``; the
    class name alone groups them. Anything that is not a dotted path of
    identifiers (``500``, ``Error running tool``) is kept as it is.

    Example:
        >>> short_code("myapp.errors.RefundTimeout"), short_code("RefundTimeout"), short_code("a. b")
        ('RefundTimeout', 'RefundTimeout', 'a. b')
    """
    if "." not in code or _DOTTED.fullmatch(code) is None:
        return code
    return code.rpartition(".")[2]


def _code(span: Span) -> str:
    """``error.type``, else the exception's type, else the status message's head.

    A status message often carries the failing call's arguments
    (``Error running tool: {'tool_name': ...}``); its part before the first
    colon is the code, so that failures of one kind group together, and the
    whole text stays the error's message.
    """
    code = span.attrs.get("error.type") or span.exception
    if code:
        return str(code)
    return _message_head(span.message) or "ERROR"


def _message_head(message: str) -> str:
    """A status message's head: its text before the first colon, as a code.

    A message that is a structure (a JSON object, or a Python dict's repr, as
    some instrumentations write an exception's payload) gives the head of the
    ``message`` (else ``error``, ``type``) it holds, not its first characters.

    Example:
        >>> _message_head("Error running tool: {'tool_name': 'charge_card'}")
        'Error running tool'
        >>> _message_head("{'message': 'Max turns exceeded', 'data': {'max_turns': 5}}")
        'Max turns exceeded'
        >>> _message_head('{"detail": 1}')
        '{"detail"'
    """
    text = message.strip()
    if text[:1] == "{" and len(text) <= _STRUCTURED_CHARS:
        text = _held_message(text) or text
    return text.partition(": ")[0].strip()[:_CODE_CHARS]


def _held_message(text: str) -> str | None:
    """The message a structured status message holds, if it is one."""
    try:
        value = json.loads(text)
    except ValueError:
        try:  # a literal only: no name is looked up, nothing is called
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(value, dict):
        return None
    for key in _HELD_KEYS:
        found = value.get(key)
        if isinstance(found, str) and found.strip():
            return found.strip()
    return None


class Steps:
    """Which spans are steps of which run, and each agent's own model usage."""

    def __init__(self, index: SpanIndex) -> None:
        self.index = index
        self._clear: dict[Key, bool] = {}
        #: Each agent span's own usage: its model calls (not its callees'),
        #: else what its own span carries.
        self.usage: dict[Key, Usage] = {}
        calls: dict[Key, list[Usage]] = {}
        #: The model calls among the spans (asked again for every step).
        self.llm: set[Key] = set()
        for key, span in index.spans.items():
            if key in index.agent_set or not is_llm(span):
                continue
            self.llm.add(key)
            owner = index.otel.get(key)
            usage = usage_of(span)
            if owner is not None and usage is not None:
                calls.setdefault(owner, []).append(usage)
        for key in index.agent_set:
            found = calls.get(key)
            total = sum_usage(found) if found else usage_of(index.spans[key])
            if total is not None:
                self.usage[key] = total

    def _reaches_agent(self, key: Key) -> bool:
        """Whether only wrappers (turns, cycles, chains) stand between the span and its agent."""
        path: list[Key] = []
        cur: Key | None = self.index.parent_of(key)
        answer = False
        while cur is not None:
            if cur in self.index.agent_set:
                answer = True
                break
            known = self._clear.get(cur)
            if known is not None:
                answer = known
                break
            path.append(cur)
            if not is_container(self.index.spans[cur]):
                break
            cur = self.index.parent_of(cur)
        for step in path:
            self._clear[step] = answer and is_container(self.index.spans[step])
        return answer and all(self._clear[step] for step in path)

    def node(self, key: Key, span: Span, run: str) -> Node | None:
        """The step record of a span that is not an agent, or None if it is part of another."""
        attrs = span.attrs
        if attrs.get("tracekit.delegated"):
            return None
        parent = (span.trace, span.parent)
        if "tracekit.step" in attrs:
            return _node(span, run, self.index.step_name(span), None)
        tool = tool_name(span)
        if tool is not None:
            if not self._reaches_agent(key):
                return None
            # step_name's answer without asking tool_name again (an empty tool name is unnamed)
            return _node(span, run, tool or span.name or span.id, "tool")
        if key in self.llm:
            if not self._reaches_agent(key):
                return None
            return _node(span, run, span.name or span.id, "llm", usage_of(span))
        if parent in self.index.agent_set and not is_container(span):
            # step_name's answer: no tracekit.step, no tool name (both asked above)
            return _node(span, run, span.name or span.id, None)
        return None


def _node(span: Span, run: str, name: str, call: str | None, usage: Usage | None = None) -> Node:
    ended = span.end is not None
    # own_error's answer is None without any of these: most steps, so not asked.
    may_fail = span.error or span.exception is not None or not _WRITTEN.isdisjoint(span.attrs)
    error = own_error(span) if ended and may_fail else None
    return Node(
        ts=span.start / _NS_PER_MS,
        service=span.service,
        traceId=span.trace or None,
        runId=run,
        id=name,
        ok=(error is None) if ended else None,
        durationMs=(span.end - span.start) / _NS_PER_MS if span.end is not None else None,
        call=call,  # type: ignore[arg-type]
        error=error if call is not None else None,
        usage=usage,
    )
