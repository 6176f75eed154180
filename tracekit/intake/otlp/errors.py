"""Why each agent span failed: its own error, and what the spans around it add.

An agent's error is its span's own (:func:`~tracekit.intake.otlp.steps.own_error`),
completed from the spans around it: the child an ``AGENT_FAILED`` wraps, the
circle of a recursion refusal, the tool that raised inside it, and for a
workflow root that a processor marked OK, the agent that was speaking last.

Example:
    >>> sorted(CANCELLED_CODES)[:2]
    ['CANCELED', 'CANCELLED']
"""

from __future__ import annotations

from typing import Final

from tracekit.events import ErrorInfo, Node
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.shapes.limits import ends_run_on_turn_error
from tracekit.intake.otlp.spans import Key, SpanIndex
from tracekit.intake.otlp.steps import own_error
from tracekit.intake.otlp.stops import limit_above

__all__ = ["CANCELLED_CODES", "agent_errors"]

CANCELLED_CODES: Final = frozenset({"CANCELLED", "CANCELED", "cancelled", "canceled"})
_CANCELLED: Final = CANCELLED_CODES


def agent_errors(index: SpanIndex, failed_tools: dict[Key, Node]) -> dict[Key, ErrorInfo]:
    """Each failed agent span's error, children first so a wrapper finds its cause.

    A recursion refusal seen only through GenAI spans (no ``chain`` written)
    gets its circle from the path of agents above it; a workflow root that a
    processor marked OK fails with the agent that was speaking last, if that
    one failed and nobody took over (:func:`_unhandled`). An agent whose
    failure has no type of its own (a status message only), with a tool of
    its own that raised and no failed callee, has that tool's error as its
    ``cause``: the failure began in the tool.
    """
    out: dict[tuple[str, str], ErrorInfo] = {}
    for key in reversed(index.agents):
        span = index.spans[key]
        error = own_error(span)
        if error is None:
            error = _unhandled(index, key, out)
            if error is None and index.is_root(key):
                error = limit_above(index, key)  # the runner above stopped the run
            if error is None:
                continue
        if error.code == "AGENT_FAILED" and error.cause is None:
            error.cause = _cause(index, key, out)
        elif (
            error.cause is None
            and not error.code.startswith("AGENT_")
            and error.code not in _CANCELLED  # a cancellation is no failure to trace back
        ):
            # tracekit's own codes say what they wrap; an app's exception is
            # matched to the callee it came from
            error.cause = _raised_from(index, key, error, out)
        if error.code == "AGENT_RECURSION" and not error.chain:
            # a refusal re-raised unchanged up the chain carries the refused call's circle
            error.chain = _refused_below(index, key, out) or _circle(index, key)
        if (
            error.cause is None
            and _untyped(index.spans[key])
            and not _failed_callee(index, key, out)
        ):
            error.cause = _tool_cause(error, failed_tools.get(key))
        out[key] = error
    return out


def _refused_below(index: SpanIndex, key: Key, errors: dict[Key, ErrorInfo]) -> list[str] | None:
    """The circle of a callee's recursion refusal, when this agent re-raised it."""
    for child in index.children_agents.get(key, ()):
        found = errors.get(child)
        if found is not None and found.code == "AGENT_RECURSION" and found.chain:
            return found.chain
    return None


def _raised_from(
    index: SpanIndex, key: Key, error: ErrorInfo, errors: dict[Key, ErrorInfo]
) -> ErrorInfo | None:
    """The failed callee whose exception this agent's failure carried up, if the spans show one.

    The evidence, in the order it is trusted: the callee failed with the
    same exception (code and message: re-raised untouched, or a thread's
    exception re-raised by the caller that joined it); or the agent's stack
    trace shows the callee's exception as the one it was raised from
    (``raise AppError(...) from e``, or a raise while handling it). Among
    callees that match, the first to end: it failed first.
    """
    failed = [
        c
        for c in index.children_agents.get(key, ())
        if c in errors and errors[c].code not in _CANCELLED
    ]
    if not failed:
        return None
    failed.sort(key=lambda c: (index.spans[c].end or 0, index.spans[c].start, c))
    for child in failed:
        found = errors[child]
        if found.code == error.code and found.message == error.message:
            return found
    chained = index.spans[key].exception_cause
    if chained:
        for child in failed:
            if _named_in(errors[child], index.spans[child], chained):
                return errors[child]
    return None


def _named_in(error: ErrorInfo, span: Span, text: str) -> bool:
    """Whether a stack trace's text names this exception (its class and its message)."""
    if error.code not in text:
        return False
    said = span.exception_message or error.message
    return not said or said in text


def _tool_cause(error: ErrorInfo, tool: Node | None) -> ErrorInfo | None:
    """The error of the agent's last failed tool call, when it says more than the agent's."""
    if tool is None or tool.error is None or tool.error.code == error.code:
        return None
    message = f"tool {tool.id}: {tool.error.message}" if tool.error.message else f"tool {tool.id}"
    return ErrorInfo(code=tool.error.code, message=message)


def _untyped(span: Span) -> bool:
    """The span's failure has no type of its own (only a status message)."""
    return not span.attrs.get("error.type") and span.exception is None


def _failed_callee(index: SpanIndex, key: Key, errors: dict[Key, ErrorInfo]) -> bool:
    return any(c in errors for c in index.children_agents.get(key, ()))


def _circle(index: SpanIndex, key: tuple[str, str]) -> list[str]:
    """The agents from the first call of the refused agent down to its refusal."""
    names: list[str] = []
    cur: tuple[str, str] | None = key
    while cur is not None and len(names) <= len(index.agents):
        if not index.is_workflow(cur) or cur == key:
            names.append(index.agent_name(index.spans[cur]))
        cur = index.edges[cur].parent
    names.reverse()
    first = names.index(names[-1])
    return names[first:] if first < len(names) - 1 else names


def _unhandled(
    index: SpanIndex, key: tuple[str, str], errors: dict[tuple[str, str], ErrorInfo]
) -> ErrorInfo | None:
    """A workflow root's failure that its own span hides: the last speaker failed.

    A handoff passes the conversation on, so the run's answer is the last
    agent's, following handoffs from the root's last call; if that agent
    failed, the run raised whatever its root span says. A root agent of a
    family whose runs end with an error out of any agent's turn (a team runtime's
    runs: :func:`~tracekit.intake.otlp.shapes.limits.ends_run_on_turn_error`)
    is read the same way, and so is a root agent whose app span above it (no
    agent's: a desk that runs one agent after another) failed on its own: the
    app raised, and the run with it.
    """
    if not index.is_root(key):
        return None
    span = index.spans[key]
    above = index.spans.get((key[0], span.parent)) if span.parent else None
    if (
        not index.is_workflow(key)
        and not ends_run_on_turn_error(span, above)
        and not _app_failed(index, key, above)
    ):
        return None
    last = _last_call(index, key)
    while last is not None:
        handed = [
            c for c in index.children_agents.get(last, ()) if index.edges[c].kind == "handoff"
        ]
        if not handed:
            break
        last = max(handed, key=lambda c: (index.spans[c].start, c))
    if last is None or last not in errors or errors[last].code in _CANCELLED:
        return None
    return ErrorInfo(code="AGENT_FAILED", message=errors[last].message, cause=errors[last])


def _app_failed(index: SpanIndex, key: Key, above: Span | None) -> bool:
    """The span above the root agent is the app's own (no agent's) and failed on its own."""
    if above is None or (key[0], above.id) in index.agent_set:
        return False
    return above.end is not None and own_error(above) is not None


def _last_call(index: SpanIndex, key: tuple[str, str]) -> tuple[str, str] | None:
    children = index.children_agents.get(key, ())
    return max(children, key=lambda c: (index.spans[c].start, c)) if children else None


def _cause(
    index: SpanIndex, key: tuple[str, str], errors: dict[tuple[str, str], ErrorInfo]
) -> ErrorInfo | None:
    """The error of the agent child that failed last: what an ``AGENT_FAILED`` wraps."""
    failed = [
        c
        for c in index.children_agents.get(key, ())
        if c in errors and errors[c].code not in _CANCELLED
    ]
    if not failed:
        return None
    last = max(failed, key=lambda c: (index.spans[c].end or 0, index.spans[c].start))
    return errors[last]
