"""Who is under whom in a set of spans: agent spans, their runs and their nodes.

Parents are resolved by walking up iteratively with memoisation (no
recursion: a trace may nest deeply). Loops of parent links (malformed input)
are found first by :func:`parent_loops`, so that the mapping refuses their
spans instead of building a tree out of them; a loop left in is still cut
instead of followed forever.
"""

from __future__ import annotations

from typing import Final

from tracekit.readers.otlp_json import Span

__all__ = ["Key", "SpanIndex", "is_agent", "parent_loops"]

Key = tuple[str, str]
_OLD_OPERATIONS: Final = frozenset({None, "", "agent"})
_MODEL_OPERATIONS: Final = frozenset(
    {"chat", "text_completion", "embeddings", "generate_content", "execute_tool", "create_agent"}
)


def is_agent(span: Span) -> bool:
    """Whether the span is an agent invocation (or tracekit's own root run)."""
    attrs = span.attrs
    if "tracekit.root" in attrs or "tracekit.invocation_id" in attrs:
        return True
    operation = attrs.get("gen_ai.operation.name")
    if operation == "invoke_agent":
        return True
    if (
        attrs.get("openinference.span.kind") == "AGENT"
        or attrs.get("traceloop.span.kind") == "agent"
    ):
        return True
    # The shape before invoke_agent: an agent name on a span that is no model call.
    return "gen_ai.agent.name" in attrs and operation in _OLD_OPERATIONS


def parent_loops(spans: dict[Key, Span]) -> list[list[Key]]:
    """Each loop of parent links, as its spans from child to parent.

    A span that only hangs below a loop is not part of it. Each span is
    walked once, so this is linear in the number of spans.

    Args:
        spans: the spans of whole traces, by ``(trace id, span id)``.

    Returns:
        The loops, each starting at the span first met on it.

    Example:
        >>> def span(i, parent):
        ...     return Span("t", i, parent, "s", 1, 2, {}, False, "", None)
        >>> spans = {("t", i): span(i, p) for i, p in [("a", "b"), ("b", "a"), ("c", "a")]}
        >>> parent_loops(spans)
        [[('t', 'a'), ('t', 'b')]]
    """
    loops: list[list[Key]] = []
    done: set[Key] = set()
    for start in spans:
        path: list[Key] = []
        on_path: set[Key] = set()
        cur: Key | None = start
        while cur is not None and cur not in done and cur not in on_path:
            path.append(cur)
            on_path.add(cur)
            span = spans[cur]
            parent = (span.trace, span.parent)
            cur = parent if span.parent and parent in spans else None
        if cur is not None and cur in on_path:
            loops.append(path[path.index(cur) :])
        done.update(path)
    return loops


def _tool_name(span: Span) -> str | None:
    name = span.attrs.get("gen_ai.tool.name") or span.attrs.get("tool.name")
    return str(name) if name else None


class SpanIndex:
    """Agent spans, each span's nearest agent ancestor, and the delegating nodes."""

    def __init__(self, spans: dict[Key, Span]) -> None:
        self.spans = spans
        self.agent_set = {key for key, span in spans.items() if is_agent(span)}
        self.has_children: set[Key] = set()
        for span in spans.values():
            if span.parent:
                self.has_children.add((span.trace, span.parent))
        self.ancestor = self._ancestors()
        self.agents = self._agents_parents_first()
        self.children_agents: dict[Key, list[Key]] = {}
        for key in self.agents:
            above = self.ancestor[key]
            if above is not None:
                self.children_agents.setdefault(above, []).append(key)
        self.consumed: set[Key] = set()
        self._nodes = {key: self._find_node(key) for key in self.agents}

    def _parent(self, key: Key) -> Key | None:
        span = self.spans[key]
        parent = (span.trace, span.parent)
        return parent if span.parent and parent in self.spans else None

    def _ancestors(self) -> dict[Key, Key | None]:
        """Each span's nearest agent ancestor (strictly above it), or None."""
        memo: dict[Key, Key | None] = {}
        for key in self.spans:
            if key in memo:
                continue
            path = [key]
            seen = {key}
            cur = self._parent(key)
            while (
                cur is not None
                and cur not in memo
                and cur not in self.agent_set
                and cur not in seen
            ):
                path.append(cur)
                seen.add(cur)
                cur = self._parent(cur)
            if cur is None or cur in seen:
                found = None
            elif cur in self.agent_set:
                found = cur
            else:
                found = memo[cur]
            for step in path:
                memo[step] = found
        return memo

    def _agents_parents_first(self) -> list[Key]:
        depth: dict[Key, int] = {}
        for key in self.agent_set:
            path: list[Key] = []
            cur: Key | None = key
            while cur is not None and cur not in depth:
                if cur in path:  # an ancestor loop: the last one visited becomes a root
                    self.ancestor[path[-1]] = None
                    cur = None
                    break
                path.append(cur)
                cur = self.ancestor[cur]
            base = depth[cur] + 1 if cur is not None and cur in depth else 0
            for offset, step in enumerate(reversed(path)):
                depth[step] = base + offset
        return sorted(self.agent_set, key=lambda k: (depth[k], self.spans[k].start, k))

    def _find_node(self, key: Key) -> str | None:
        """The node that delegated: the tool span between an agent and its caller."""
        written = self.spans[key].attrs.get("tracekit.node")
        if written:
            return str(written)
        above = self.ancestor[key]
        between: list[Key] = []
        cur = self._parent(key)
        while cur is not None and cur != above and len(between) < 1000:
            between.append(cur)
            cur = self._parent(cur)
        if not between:
            return None
        chosen = next((k for k in between if _tool_name(self.spans[k])), between[0])
        self.consumed.add(chosen)
        return self.step_name(self.spans[chosen])

    # -- what the records need ---------------------------------------------
    def is_root(self, key: Key) -> bool:
        """The agent span opens a root run: nothing agent-like above, no parent run named."""
        attrs = self.spans[key].attrs
        if "tracekit.root" in attrs:
            return True
        if "tracekit.invocation_id" in attrs or "tracekit.parent_run_id" in attrs:
            return False
        return self.ancestor[key] is None

    def run_id(self, key: Key) -> str:
        """The run an agent span is: ``tracekit.run_id``, else its span id."""
        span = self.spans[key]
        return str(span.attrs.get("tracekit.run_id") or span.id)

    def parent_run_id(self, key: Key) -> str | None:
        """The caller's run: ``tracekit.parent_run_id``, else the nearest agent above."""
        written = self.spans[key].attrs.get("tracekit.parent_run_id")
        if written:
            return str(written)
        above = self.ancestor[key]
        return self.run_id(above) if above is not None else None

    def run_of(self, key: Key) -> str | None:
        """The run a step span belongs to, or None when no agent is above it."""
        written = self.spans[key].attrs.get("tracekit.run_id")
        if written:
            return str(written)
        above = self.ancestor[key]
        return self.run_id(above) if above is not None else None

    def node_of(self, key: Key) -> str | None:
        """The caller's node that delegated to this agent span."""
        return self._nodes.get(key)

    @staticmethod
    def agent_name(span: Span) -> str:
        """``gen_ai.agent.name``, else ``agent.name``, else the span name."""
        attrs = span.attrs
        name = attrs.get("gen_ai.agent.name") or attrs.get("agent.name")
        if name:
            return str(name)
        return span.name.removeprefix("invoke_agent ").strip() or span.name or "?"

    @staticmethod
    def step_name(span: Span) -> str:
        """A step's id: ``tracekit.step``, else the tool name, else the span name."""
        written = span.attrs.get("tracekit.step")
        if written:
            return str(written)
        return _tool_name(span) or span.name or span.id  # an id is never empty
