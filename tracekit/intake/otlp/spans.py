"""Who is under whom in a set of spans: agent spans, their runs and their nodes.

Parents are resolved by walking up iteratively with memoisation (no
recursion: a trace may nest deeply). Loops of parent links (malformed input)
are found first by :func:`parent_loops`, so that the mapping refuses their
spans instead of building a tree out of them; a loop left in is still cut
instead of followed forever.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Final

from tracekit.intake.otlp import shapes
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.dialects import KIND, apply
from tracekit.intake.otlp.edges import EDGE_RULES, OTEL, Edge, EdgeRule
from tracekit.intake.otlp.handoff import kind_of_name
from tracekit.intake.otlp.index_view import Key
from tracekit.intake.otlp.inputs import CURRENT_AGENT
from tracekit.intake.otlp.kinds import (
    is_container,
    is_llm,
    is_tool,
    is_workflow,
    tool_name,
)
from tracekit.intake.otlp.loops import models_of_its_own
from tracekit.intake.otlp.markers import marker_target, may_mark
from tracekit.intake.otlp.shapes.words import AGENT_KIND, AGENT_KIND_VALUES, SPAN_KIND

__all__ = ["Key", "SpanIndex", "is_agent", "parent_loops"]

_OLD_OPERATIONS: Final = frozenset({None, "", "agent"})
_MODEL_OPERATIONS: Final = frozenset(
    {"chat", "text_completion", "embeddings", "generate_content", "execute_tool", "create_agent"}
)


def is_agent(span: Span) -> bool:
    """Whether the span is an agent invocation (or tracekit's own root run).

    A graph framework's node span is decided per trace instead
    (:func:`tracekit.intake.otlp.shapes.graph_shapes`): span kinds follow run
    names there.
    """
    attrs = span.attrs
    if "tracekit.root" in attrs or "tracekit.invocation_id" in attrs:
        return True
    declared = attrs.get(KIND)
    if declared is not None:  # a dialect's verdict (:mod:`.dialects`)
        return declared == "agent"
    # A framework's shape overrules the generic rules below; most spans' names and
    # attributes are no shape's, and a name is looked up once (shapes.may_decide).
    if shapes.DECIDER_NAMES[span.name] or not shapes.DECIDER_KEYS.isdisjoint(attrs):
        verdict = shapes.agent_verdict(span)
        if verdict is not None:
            return verdict
    operation = attrs.get("gen_ai.operation.name")
    if operation == "invoke_agent":
        return True
    if attrs.get(SPAN_KIND) == AGENT_KIND:
        return shapes.graph_meta(span) is None
    if any(attrs.get(key) == value for key, value in AGENT_KIND_VALUES):
        return True
    # The shape before invoke_agent: an agent name on a span that is no model call.
    return (
        "gen_ai.agent.name" in attrs
        and operation in _OLD_OPERATIONS
        and not (is_llm(span) or is_tool(span) or is_container(span))
    )


def _declared(attrs: dict[str, object]) -> bool:
    """An agent by a declaration or a name, not only by a span kind: it stays one when idle."""
    return (
        KIND in attrs
        or not shapes.NAME_KEYS.isdisjoint(attrs)
        or attrs.get("gen_ai.operation.name") == "invoke_agent"
        or "tracekit.invocation_id" in attrs
        or "tracekit.root" in attrs
    )


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
    walk: dict[Key, int] = {}  # each span -> the walk that reached it first
    for n, start in enumerate(spans):
        if start in walk:
            continue
        path: list[Key] = []
        cur: Key | None = start
        while cur is not None:
            reached = walk.get(cur)
            if reached is not None:
                if reached == n:  # this walk came back to itself: a loop
                    loops.append(path[path.index(cur) :])
                break
            walk[cur] = n
            path.append(cur)
            span = spans[cur]
            parent = (span.trace, span.parent)
            cur = parent if span.parent and parent in spans else None
    return loops


#: Attributes of an agent span that name its caller some other way than the span tree.
_EVIDENCE: Final = frozenset(
    {
        "gen_ai.caller.name",
        "gen_ai.caller.agent.name",
        "graph.node.parent_id",
        "metadata",
    }
)


class SpanIndex:
    """Agent spans, their edges (:mod:`tracekit.intake.otlp.edges`), and what the rest are."""

    def __init__(self, spans: dict[Key, Span], rules: tuple[EdgeRule, ...] = EDGE_RULES) -> None:
        self.spans = spans
        apply(spans)  # the dialects' verdicts first (run again, it changes nothing)
        self.graph_agents, graph_workflows = shapes.graph_shapes(spans)
        self.workflows = graph_workflows
        self.agent_set = set(self.graph_agents)
        self.has_children: set[Key] = set()
        marks: list[Key] = []
        turns: list[Key] = []
        linked: set[str] = set()
        for key, span in spans.items():  # one pass: a big file holds millions of spans
            if span.parent:
                self.has_children.add((span.trace, span.parent))
            if span.links:
                linked.add(span.trace)
            if CURRENT_AGENT in span.attrs:
                turns.append(key)  # an agent's turn: its invocation is found below
            elif is_workflow(span):
                self.workflows.add(key)
            elif is_agent(span):
                self.agent_set.add(key)
            elif may_mark(span):
                marks.append(key)
        self.agent_set |= self.workflows
        if turns:  # agents with no span, only turns
            heads = shapes.turn_invocations(spans, turns)
            self.agent_set.update(heads)
            self.has_children.update(heads)
        self._idle_agents()
        self._spanless_agents(marks)
        self._named_workflows()
        # A workflow inside an agent (an agent used as a tool may run one) is no run of its own.
        nested = {key for key in self.workflows if self._inside_agent(key)}
        self.workflows -= nested
        self.agent_set -= nested
        self.otel = self._ancestors()
        self.claimed: set[Key] = set()
        #: Per trace, the spans that may be handoffs (:mod:`.markers` reads them).
        self.markers: dict[str, list[Key]] = {}
        #: Traces with any evidence of an edge besides the span tree; in the
        #: others (most traces: nesting only) the rules are not tried.
        self._evidence: set[str] = linked
        for key in marks:
            if key not in self.agent_set:
                self.markers.setdefault(key[0], []).append(key)
                self._evidence.add(key[0])
        for key in self.agent_set:
            span = spans[key]
            if span.links or not _EVIDENCE.isdisjoint(span.attrs):
                self._evidence.add(key[0])
        self._evidence |= self._side_by_side()
        self._tools: dict[Key, list[Key]] | None = None  # tool spans by agent, when asked
        self._by_name: dict[tuple[str, str], list[Key]] | None = None
        #: Agent spans by their OTel parent, built once when :mod:`.links` first asks.
        self.agent_children: dict[Key, list[Key]] | None = None
        self.edges: dict[Key, Edge] = {}
        self._depth: dict[Key, int] = {}
        self._runs: dict[Key, str] = {}  # run_of's answers by agent span
        # Only evidence rules need start order (a caller placed first); the span tree does not.
        order = sorted(self.agent_set, key=self._order) if self._evidence else self.agent_set
        for key in order:
            self.edges[key] = self._edge(key, rules)
        self.agents = self._agents_parents_first()
        self.children_agents: dict[Key, list[Key]] = {}
        for key in self.agents:
            above = self.edges[key].parent
            if above is not None:
                self.children_agents.setdefault(above, []).append(key)
        self.consumed = {edge.node for edge in self.edges.values() if edge.node is not None}

    # -- building ------------------------------------------------------------
    def _idle_agents(self) -> None:
        """An agent span that does no agent work is a step: a tool call, an event, an answer.

        A span kind may mark the tool call that ends an agent's turn (a final
        answer) as an agent: with no child (no model call, no tool), no
        failure and no agent name, right under another agent (no tool call
        between them: an agent used as a tool is one), it is that agent's
        tool step. A span declared an agent (a dialect, the
        GenAI ``invoke_agent``, tracekit's own) or named as one stays one.
        """
        leaves = [
            key
            for key in self.agent_set
            if key not in self.has_children and key not in self.graph_agents
        ]
        if not leaves:
            return
        siblings = self._named_siblings(leaves)
        for key, beside in siblings.items():  # the agent's work is in a same-named span beside it
            span = self.spans[key]
            self.agent_set.discard(key)
            self.agent_set.add(beside)
            name = self.agent_name(span)
            self.spans[beside].attrs = {**self.spans[beside].attrs, KIND: "agent",
                                        "gen_ai.agent.name": name}  # fmt: skip
            span.attrs = {**span.attrs, KIND: "wrapper"}
        for key in leaves:
            span = self.spans[key]
            attrs = span.attrs
            if key in siblings or _declared(attrs) or span.error or span.exception is not None:
                continue
            if not span.parent or not self._right_under_agent(key):
                continue
            self.agent_set.discard(key)
            name = attrs.get("tool.name") or attrs.get("gen_ai.tool.name") or span.name
            span.attrs = {**attrs, KIND: "tool", "gen_ai.tool.name": str(name)}

    def _spanless_agents(self, marks: list[Key]) -> None:
        """Delegation tool spans that stand for an agent with no span of its own.

        A coworker of a crew may exist only as the manager's delegation
        span (``Delegate work to coworker``), whose input names it, with the
        coworker's own tool spans as its children: that span is then the
        coworker's invocation (named by the tool's target), its children its
        steps. A delegation span with an agent span under it is only a node.
        """
        found: list[tuple[Key, str]] = []
        for key in marks:  # cheap tests first: most traces have no such span
            if key not in self.has_children:
                continue
            span = self.spans[key]
            target = marker_target(span)
            if target is not None and kind_of_name(tool_name(span) or span.name) == "delegate":
                found.append((key, target))
        if not found:
            return
        below_agent = self._agents_below()
        for key, target in found:
            if key not in below_agent:
                span = self.spans[key]
                span.attrs = {**span.attrs, "gen_ai.agent.name": target}
                self.agent_set.add(key)

    def _agents_below(self) -> set[Key]:
        """The spans with an agent span somewhere under them."""
        found: set[Key] = set()
        for key in self.agent_set:
            cur = self.parent_of(key)
            while cur is not None and cur not in found:
                found.add(cur)
                cur = self.parent_of(cur)
        return found

    def _named_workflows(self) -> None:
        """An agent span whose child is a workflow of the same name is that workflow.

        An instrumentation may open the run twice (an ``invoke_agent swarm``
        around its ``swarm.workflow``): the outer span is the run, the inner
        one its wrapper. A graph that calls the model itself is one agent, not a run.
        """
        for key in list(self.workflows):
            above = self.parent_of(key)
            if above is None or above not in self.agent_set or above in self.workflows:
                continue
            if self.agent_name(self.spans[above]) == self.agent_name(self.spans[key]):
                self.workflows.discard(key)
                self.agent_set.discard(key)
                self.spans[key].attrs = {**self.spans[key].attrs, KIND: "wrapper"}
                if not models_of_its_own(self.spans, above, self.agent_set):
                    self.workflows.add(above)

    def _named_siblings(self, leaves: list[Key]) -> dict[Key, Key]:
        """Each childless agent span's sibling of the same agent name that holds the work.

        An instrumentation may write the agent's invocation as a childless
        span beside the node span that runs it (an ``invoke_agent X`` marker
        next to ``execute_task X``): that node span is the agent's.
        """
        wanted: dict[tuple[str, str], list[Key]] = {}
        for key in leaves:
            span = self.spans[key]
            if span.parent and KIND not in span.attrs:
                wanted.setdefault((key[0], span.parent), []).append(key)
        if not wanted:
            return {}
        found: dict[Key, Key] = {}
        for key, span in self.spans.items():
            group = wanted.get((key[0], span.parent)) if span.parent else None
            if not group or key not in self.has_children or key in self.agent_set:
                continue
            words = {span.name.rpartition(" ")[2], *map(str, span.attrs.values())}
            for leaf in group:
                if leaf not in found and self.agent_name(self.spans[leaf]) in words:
                    found[leaf] = key
        return found

    def _right_under_agent(self, key: Key) -> bool:
        """Whether an agent is above the span with no tool call between them."""
        cur = self.parent_of(key)
        for _ in range(100_000):
            if cur is None or is_tool(self.spans[cur]):
                return False
            if cur in self.agent_set:
                return True
            cur = self.parent_of(cur)
        return False

    def _inside_agent(self, key: Key) -> bool:
        cur = self.parent_of(key)
        for _ in range(100_000):
            if cur is None:
                return False
            if cur in self.agent_set and cur not in self.workflows:
                return True
            cur = self.parent_of(cur)
        return False

    def is_workflow(self, key: Key) -> bool:
        """Whether the span is a whole run (workflow, swarm, graph) rather than one agent."""
        return key in self.workflows

    def parent_of(self, key: Key) -> Key | None:
        """The span's OTel parent, when it is among the spans."""
        span = self.spans[key]
        parent = (span.trace, span.parent)
        return parent if span.parent and parent in self.spans else None

    def _ancestors(self) -> dict[Key, Key | None]:
        """Each span's nearest agent ancestor by OTel parents (strictly above it), or None."""
        memo: dict[Key, Key | None] = {}
        spans, agents = self.spans, self.agent_set
        for key, span in spans.items():
            if key in memo:
                continue
            path = [key]
            seen = {key}
            cur: Key | None = (span.trace, span.parent)  # parent_of, inline: once a span
            if not span.parent or cur not in spans:
                cur = None
            while cur is not None and cur not in memo and cur not in agents and cur not in seen:
                path.append(cur)
                seen.add(cur)
                cur = self.parent_of(cur)
            if cur is None or cur in seen:
                found = None
            elif cur in self.agent_set:
                found = cur
            else:
                found = memo[cur]
            for step in path:
                memo[step] = found
        return memo

    def _order(self, key: Key) -> tuple[int, int, Key]:
        """Agents in start order; at one moment, a caller before its callee."""
        path: list[Key] = []
        cur: Key | None = key
        while cur is not None and cur not in self._depth and len(path) <= len(self.agent_set):
            path.append(cur)
            cur = self.otel[cur]
        base = self._depth.get(cur, 0) if cur is not None else -1
        for offset, step in enumerate(reversed(path), 1):
            self._depth[step] = base + offset
        return (self.spans[key].start, self._depth[key], key)

    def _edge(self, key: Key, rules: tuple[EdgeRule, ...]) -> Edge:
        """The first rule's finding; one that agrees with the OTel parent is the OTel parent's."""
        attrs = self.spans[key].attrs
        plain = Edge(self.otel[key], None, "delegate", OTEL)
        if "tracekit.parent_run_id" in attrs or "tracekit.root" in attrs:
            edge = plain  # the runtime knew its parent
        elif key[0] not in self._evidence:
            edge = rules[-1](self, key) or plain
        else:
            edge = next((e for e in (rule(self, key) for rule in rules) if e is not None), plain)
            if edge.source != OTEL and edge.parent == self.otel[key]:
                edge = EDGE_RULES[-1](self, key) or plain
        if edge.node is not None:
            self.claimed.add(edge.node)
        return edge

    def _agents_parents_first(self) -> list[Key]:
        depth: dict[Key, int] = {}
        for key in self.agent_set:
            path: list[Key] = []
            cur: Key | None = key
            while cur is not None and cur not in depth:
                if cur in path:  # cannot happen (edges point to earlier agents); cut it anyway
                    cur = None
                    break
                path.append(cur)
                cur = self.edges[cur].parent
            base = depth[cur] + 1 if cur is not None and cur in depth else 0
            for offset, step in enumerate(reversed(path)):
                depth[step] = base + offset
        return sorted(self.agent_set, key=lambda k: (depth[k], self.spans[k].start, k))

    # -- what the rules ask --------------------------------------------------
    def otel_agent(self, key: Key) -> Key | None:
        """The nearest agent span above ``key`` by OTel parents."""
        return self.otel.get(key)

    def may_call(self, parent: Key, key: Key) -> bool:
        """Whether ``parent`` may be the caller of ``key``: it was placed first and is not below it."""
        if parent not in self.edges:
            return False
        cur: Key | None = parent
        for _ in range(10_000):
            if cur is None:
                return True
            if cur == key:
                return False
            edge = self.edges.get(cur)
            cur = edge.parent if edge is not None else self.otel.get(cur)
        return False

    def below(self, key: Key, ancestor: Key) -> bool:
        """Whether ``key`` is under ``ancestor`` in the span tree."""
        cur = self.parent_of(key)
        for _ in range(100_000):
            if cur is None:
                return False
            if cur == ancestor:
                return True
            cur = self.parent_of(cur)
        return False

    def _agents_named(self, trace: str, name: str) -> list[Key]:
        if self._by_name is None:
            self._by_name = {}
            for key in self.agent_set:
                self._by_name.setdefault((key[0], self.agent_name(self.spans[key])), []).append(key)
        return self._by_name.get((trace, name), [])

    def latest_agent(self, key: Key, name: str) -> Key | None:
        """The latest agent span named ``name`` that started before ``key``, not below it."""
        start = self.spans[key].start
        found: Key | None = None
        for other in self._agents_named(key[0], name):
            span = self.spans[other]
            if other == key or span.start > start or self.below(other, key):
                continue
            if found is None or span.start >= self.spans[found].start:
                found = other
        return found

    def running_agent(self, key: Key, name: str, moment: int) -> Key | None:
        """The latest agent span named ``name`` that was running at ``moment``."""
        found: Key | None = None
        for other in self._agents_named(key[0], name):
            span = self.spans[other]
            if other == key or span.start > moment or (span.end is not None and span.end < moment):
                continue
            if found is None or span.start >= self.spans[found].start:
                found = other
        return found

    def _side_by_side(self) -> set[str]:
        """Traces where an agent under a run started while another agent of the run was running.

        A runner may open an agent called from a tool beside its caller (both
        under the run): the ``tool.window`` rule reads those traces.
        """
        by_run: dict[Key, list[Span]] = {}
        for key in self.agent_set:
            above = self.otel[key]
            if above is not None and above in self.workflows:
                by_run.setdefault(above, []).append(self.spans[key])
        found: set[str] = set()
        for run, beside in by_run.items():
            beside.sort(key=lambda span: span.start)
            for before, after in pairwise(beside):
                if before.end is None or before.end > after.start:
                    found.add(run[0])
                    break
        return found

    def tools_of(self, agent: Key) -> list[Key]:
        """The tool spans whose nearest agent above is ``agent`` (all agents' built once)."""
        if self._tools is None:
            self._tools = {}
            for key, span in self.spans.items():
                above = self.otel.get(key)
                if above is not None and key not in self.agent_set and is_tool(span):
                    self._tools.setdefault(above, []).append(key)
        return self._tools.get(agent, [])

    def open_tool(self, agent: Key, moment: int) -> Key | None:
        """The agent's latest tool span that was open at ``moment``."""
        found: Key | None = None
        for key, span in self.spans.items():
            if key[0] != agent[0] or self.otel.get(key) != agent or not is_tool(span):
                continue
            open_then = span.start <= moment and (span.end is None or span.end >= moment)
            if open_then and (found is None or span.start >= self.spans[found].start):
                found = key
        return found

    def namespace_agent(self, key: Key, ns: str) -> Key | None:
        """The agent whose graph checkpoint namespace is ``ns``; the workflow above for ``""``."""
        if not ns:
            cur = self.otel.get(key)
            while cur is not None and cur not in self.workflows:
                cur = self.otel.get(cur)
            return cur
        for other in self.graph_agents:
            if other[0] != key[0] or other == key:
                continue
            meta = shapes.graph_meta(self.spans[other])
            if meta is not None and shapes.namespace(meta) == ns:
                return other
        return None

    def node_between(self, parent: Key | None, key: Key) -> Key | None:
        """The tool span between ``key`` and ``parent`` in the span tree (nearest to ``key``)."""
        cur = self.parent_of(key)
        steps = 0
        while cur is not None and cur != parent and steps < 1000:
            if cur not in self.claimed and is_tool(self.spans[cur]):
                return cur
            cur = self.parent_of(cur)
            steps += 1
        return None

    # -- what the records need ---------------------------------------------
    def is_root(self, key: Key) -> bool:
        """The agent span opens a root run: no caller found, no parent run named."""
        attrs = self.spans[key].attrs
        if "tracekit.root" in attrs:
            return True
        if "tracekit.invocation_id" in attrs or "tracekit.parent_run_id" in attrs:
            return False
        return self.edges[key].parent is None

    def run_id(self, key: Key) -> str:
        """The run an agent span is: ``tracekit.run_id``, else its span id."""
        span = self.spans[key]
        return str(span.attrs.get("tracekit.run_id") or span.id)

    def parent_run_id(self, key: Key) -> str | None:
        """The caller's run: ``tracekit.parent_run_id``, else the caller found by the rules."""
        written = self.spans[key].attrs.get("tracekit.parent_run_id")
        if written:
            return str(written)
        above = self.edges[key].parent
        return self.run_id(above) if above is not None else None

    def run_of(self, key: Key) -> str | None:
        """The run a step span belongs to, or None when no agent is above it."""
        written = self.spans[key].attrs.get("tracekit.run_id")
        if written:
            return str(written)
        above = self.otel[key]
        if above is None:
            return None
        found = self._runs.get(above)  # an agent's steps ask for one run id
        if found is None:
            found = self._runs[above] = self.run_id(above)
        return found

    def node_of(self, key: Key) -> str | None:
        """The caller's node that delegated to this agent span."""
        written = self.spans[key].attrs.get("tracekit.node")
        if written:
            return str(written)
        node = self.edges[key].node
        return self.step_name(self.spans[node]) if node is not None else None

    #: The agent's name, as its framework's shape gives it (:mod:`.shapes`).
    agent_name = staticmethod(shapes.agent_name)

    @staticmethod
    def step_name(span: Span) -> str:
        """A step's id: ``tracekit.step``, else the tool name, else the span name."""
        written = span.attrs.get("tracekit.step")
        if written:
            return str(written)
        return tool_name(span) or span.name or span.id  # an id is never empty
