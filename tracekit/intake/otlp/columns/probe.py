"""Which span names and labels the set-based mapping may take: asked of the per-span mapping itself.

The per-span mapping reads a span's name in many places (framework shapes,
handoff words, wrappers, workflows, turns). Rather than restate those rules
in SQL, each distinct (role, name, label) of a batch is mapped once, in a
tiny trace, by :class:`~tracekit.intake.otlp.convert.OtlpConverter`, and the
set-based mapping takes a span only if that came out as it assumes: an agent
named by its ``gen_ai.agent.name``, a tool step or delegating node named by
its ``gen_ai.tool.name``, a plain step named by its span name.

Example:
    >>> verdict("agent", "invoke_agent triage", "triage"), verdict("step", "think", "")
    (True, True)
    >>> verdict("tool", "execute_tool lookup", "lookup"), verdict("step", "turn", "")
    (True, False)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

from tracekit.events import Enter, Event, Node, RunEnd, RunStart
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.decode_json import Span, is_transfer_name, names_transfer
from tracekit.intake.otlp.inputs import is_turn
from tracekit.intake.otlp.markers import marker_target, may_mark

__all__ = ["ROLES", "delegation", "marker", "reads_target", "verdict"]

#: The roles a span may have in a trace the set-based mapping takes.
ROLES: Final = ("agent", "tool", "step")
_TRACE: Final = "0" * 31 + "1"
_ROOT: Final = "00000000000000a1"
_TOOL: Final = "00000000000000b2"
_CHILD: Final = "00000000000000c3"


def _span(span_id: str, parent: str, name: str, attrs: dict[str, Any], at: int) -> Span:
    return Span(
        _TRACE,
        span_id,
        parent,
        name,
        at * 1_000_000,
        (at + 1) * 1_000_000,
        attrs,
        False,
        "",
        "probe",
        transfer=is_transfer_name(name),
    )


def _agent(name: str, agent: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}


def _tool(tool: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}


def _map(spans: list[Span]) -> list[Event]:
    converter = OtlpConverter()
    converter.feed_spans(spans)
    return converter.finish()


def marker(role: str, name: str, label: str) -> tuple[bool, str | None]:
    """Whether a span may be a handoff marker (:func:`~tracekit.intake.otlp.markers.may_mark`), and whom it names.

    A marker serves the edge rules across its whole trace, so a trace with
    one is taken only where the marker is the tool that calls the very agent
    it names.

    Example:
        >>> marker("tool", "execute_tool transfer_to_billing", "transfer_to_billing")
        (True, 'billing')
    """
    attrs = (
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": label}
        if role == "tool"
        else {}
    )
    span = Span(
        _TRACE, _TOOL, _ROOT, name, 1, 2, attrs, False, "", None, transfer=is_transfer_name(name)
    )
    if not may_mark(span):
        return False, None
    return True, marker_target(span)


def reads_target(role: str, name: str, label: str) -> bool:
    """Whether the converter reads a transfer's target from this span's arguments and events.

    Such a span is taken only without those (``arguments`` and ``events`` 0):
    its target is then none, as in the probe.
    """
    return names_transfer(name, {"gen_ai.tool.name": label} if role == "tool" else {})


@lru_cache(maxsize=65536)
def verdict(role: str, name: str, label: str) -> bool:
    """Whether a span of ``role`` (agent, tool, step) with this name and label maps as assumed.

    ``label`` is the agent's name for an agent, the tool's for a tool, '' for a step.
    """
    if is_turn(name):
        return False
    if role == "agent":
        return _is_root(_map([_span(_ROOT, "", name, _agent(name, label), 1)]), label)
    root = _span(_ROOT, "", "invoke_agent probe-root", _agent("", "probe-root"), 1)
    if role == "tool":
        return _is_step(_map([root, _span(_TOOL, _ROOT, name, _tool(label), 2)]), label, "tool")
    if role == "step":
        return _is_step(_map([root, _span(_TOOL, _ROOT, name, {}, 2)]), name, None)
    return False


@lru_cache(maxsize=65536)
def delegation(tool_name: str, tool: str, agent_name: str, agent: str) -> tuple[str, str] | None:
    """The kind and edge source of an agent called through a tool span, or None if not as assumed.

    ``('delegate', '')`` for a plain delegation; a handoff or spawn tool gives
    its kind. None when the converter maps the pair any other way (another
    parent run, another node): such a trace is left to it.

    Example:
        >>> delegation("execute_tool spawn_subagent", "spawn_subagent", "invoke_agent b", "b")
        ('subagent', '')
    """
    if is_turn(tool_name) or is_turn(agent_name):
        return None
    events = _map(
        [
            _span(_ROOT, "", "invoke_agent probe-root", _agent("", "probe-root"), 1),
            _span(_TOOL, _ROOT, tool_name, _tool(tool), 2),
            _span(_CHILD, _TOOL, agent_name, _agent(agent_name, agent), 3),
        ]
    )
    enters = [e for e in events if isinstance(e, Enter)]
    if not _is_called(events, agent, tool):
        return None
    edge = enters[0].edge
    return enters[0].kind, "" if edge is None else edge.source


def _is_root(events: list[Event], agent: str) -> bool:
    return (
        [type(e) for e in events] == [RunStart, RunEnd]
        and isinstance(events[0], RunStart)
        and events[0].agent == agent
        and events[0].runId == _ROOT
    )


def _is_called(events: list[Event], agent: str, node: str) -> bool:
    enters = [e for e in events if isinstance(e, Enter)]
    nodes = [e for e in events if isinstance(e, Node)]
    return (
        len(events) == 4
        and not nodes
        and len(enters) == 1
        and enters[0].agent == agent
        and enters[0].node == node
        and enters[0].runId == enters[0].invocationId == _CHILD
        and enters[0].parentRunId == _ROOT
    )


def _is_step(events: list[Event], name: str, call: str | None) -> bool:
    nodes = [e for e in events if isinstance(e, Node)]
    return (
        len(events) == 3
        and len(nodes) == 1
        and nodes[0].id == name
        and nodes[0].call == call
        and nodes[0].runId == _ROOT
        and nodes[0].usage is None
    )
