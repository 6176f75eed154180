"""Handoff and delegation marker spans: which spans may be one, whom they name, which one serves.

A marker is a span that says control passed to another agent: a handoff or
transfer span (``to_agent``, ``gen_ai.transfer.target.name``), a tool whose
name reads as a handoff, or a delegation tool whose arguments name an agent.
The span index collects them per trace (:func:`may_mark`, cheap tests
first); the edge rules (:mod:`tracekit.intake.otlp.edges`) ask for the one
that serves an agent: the latest before it that names it
(:func:`latest_marker`), the caller's own (:func:`caller_marker`), or the
caller's tool span that encloses it in time (:func:`enclosing_tool`).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> span = Span("t", "h", "a", "FunctionTool.acall", 1, 2, {"tool.name": "handoff"},
    ...     False, "", None, target="billing")
    >>> may_mark(span), marker_target(span)
    (True, 'billing')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.handoff import HANDOFF_WORDS, target_of_name
from tracekit.intake.otlp.kinds import is_tool, tool_name

if TYPE_CHECKING:  # the index collects the markers; these read the index
    from tracekit.intake.otlp.index_view import IndexView, Key

__all__ = [
    "caller_marker",
    "enclosing_tool",
    "latest_marker",
    "marker_target",
    "may_mark",
    "named_marker",
]


def marker_target(span: Span) -> str | None:
    """The agent a handoff or transfer span names, if it names one."""
    attrs = span.attrs
    found = attrs.get("gen_ai.transfer.target.name") or attrs.get("to_agent") or span.target
    if found:
        return str(found)
    return target_of_name(tool_name(span) or span.name)


def may_mark(span: Span) -> bool:
    """Whether a span may be a handoff or transfer (names first: they are cheap)."""
    attrs = span.attrs
    if "to_agent" in attrs or "gen_ai.transfer.target.name" in attrs or span.target is not None:
        return True
    if span.transfer and HANDOFF_WORDS[span.name]:
        return is_tool(span)
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    return isinstance(name, str) and HANDOFF_WORDS[name]


def latest_marker(index: IndexView, key: Key, wanted: Callable[[Span], bool]) -> Key | None:
    """The latest unclaimed marker span before ``key`` started that names its agent.

    One that names no agent serves when none names this one.
    """
    span = index.spans[key]
    agent = index.agent_name(span)
    named: Key | None = None
    unnamed: Key | None = None
    for marker in index.markers.get(key[0], ()):
        found = index.spans[marker]
        if marker in index.claimed or found.start > span.start or not wanted(found):
            continue
        if index.below(marker, key):
            continue
        target = marker_target(found)
        if target == agent:
            if named is None or found.start >= index.spans[named].start:
                named = marker
        elif target is None and (unnamed is None or found.start >= index.spans[unnamed].start):
            unnamed = marker
    return named if named is not None else unnamed


def caller_marker(index: IndexView, caller: Key, key: Key) -> Key | None:
    """The caller's latest unclaimed handoff span before ``key`` that names it (or no one)."""
    agent = index.agent_name(index.spans[key])
    start = index.spans[key].start
    found: Key | None = None
    for marker in index.markers.get(caller[0], ()):
        span = index.spans[marker]
        if marker in index.claimed or index.otel.get(marker) != caller or span.start > start:
            continue
        if marker_target(span) not in (agent, None):
            continue
        if found is None or span.start >= index.spans[found].start:
            found = marker
    return found


def enclosing_tool(index: IndexView, parent: Key | None, key: Key) -> Key | None:
    """A tool span of ``parent`` that encloses ``key`` in time and names its agent.

    A team may open a member's agent span beside the leader's
    ``delegate_task_to_member`` span, not under it; the tool still spans
    the member's whole run and names it (``member_id``).
    """
    if parent is None:
        return None
    span = index.spans[key]
    agent = index.agent_name(span)
    for marker in index.markers.get(key[0], ()):
        found = index.spans[marker]
        if marker in index.claimed or index.otel.get(marker) != parent or index.below(key, marker):
            continue
        ends_after = found.end is None or (span.end is not None and found.end >= span.end)
        if found.start <= span.start and ends_after and marker_target(found) == agent:
            return marker
    return None


def named_marker(index: IndexView, parent: Key | None, key: Key) -> Key | None:
    """The caller's latest unclaimed marker span before ``key`` that names its agent.

    A delegation tool may return before the member it names runs (a team's
    ``delegate_task_to_member`` that hands back a generator): the member then
    opens under the leader after the tool span ended.
    """
    if parent is None or key[0] not in index.markers:
        return None
    agent = index.agent_name(index.spans[key])
    start = index.spans[key].start
    found: Key | None = None
    for marker in index.markers[key[0]]:
        span = index.spans[marker]
        if marker in index.claimed or index.otel.get(marker) != parent or span.start > start:
            continue
        if marker_target(span) == agent and (
            found is None or span.start >= index.spans[found].start
        ):
            found = marker
    return found
