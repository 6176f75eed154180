"""What the edge rules, the span links and the handoff markers read of the span index.

:class:`~tracekit.intake.otlp.spans.SpanIndex` calls the rules
(:mod:`.edges`, :mod:`.links`, :mod:`.markers`) while it is built, and the
rules read the index: :class:`IndexView` declares what they read, so that
they never import the index (the index satisfies it without naming it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from tracekit.intake.otlp.decoded import Span

__all__ = ["IndexView", "Key"]

#: A span's key: its trace id and span id.
Key: TypeAlias = tuple[str, str]


class IndexView(Protocol):
    """The span index as the rules read it: its spans, agents, markers and questions."""

    spans: dict[Key, Span]
    agent_set: set[Key]
    workflows: set[Key]
    otel: dict[Key, Key | None]
    claimed: set[Key]
    markers: dict[str, list[Key]]
    agent_children: dict[Key, list[Key]] | None

    def agent_name(self, span: Span) -> str: ...
    def parent_of(self, key: Key) -> Key | None: ...
    def otel_agent(self, key: Key) -> Key | None: ...
    def may_call(self, parent: Key, key: Key) -> bool: ...
    def below(self, key: Key, ancestor: Key) -> bool: ...
    def latest_agent(self, key: Key, name: str) -> Key | None: ...
    def running_agent(self, key: Key, name: str, moment: int) -> Key | None: ...
    def open_tool(self, agent: Key, moment: int) -> Key | None: ...
    def tools_of(self, agent: Key) -> list[Key]: ...
    def namespace_agent(self, key: Key, ns: str) -> Key | None: ...
    def node_between(self, parent: Key | None, key: Key) -> Key | None: ...
