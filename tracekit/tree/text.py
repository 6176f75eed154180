"""Trees as text: the seed's ``describeAgentTree`` format, and the forest around it.

Two spaces for each level. A node step prints its own name; an agent step
prints ``<node> -> <agent> (<details>)``::

    list_desks
    decide
    delegate -> sql (ok, 11ms)
      write_query
    escalate -> refunds (error AGENT_FAILED, 5ms)
    delegate -> orders (refused AGENT_RECURSION: orders -> billing -> orders)
    transfer -> billing (handoff, ok, 30ms)
    delegate -> sql (running)

Names in traces are data: control characters and ANSI escapes are printed
escaped (``\\x1b``), so a trace cannot write to the user's terminal. The full
wording is in ``docs/trace-format.md``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any, Final, Protocol

from tracekit._util.text import escape, format_ms
from tracekit._util.theme import STATUS_ANSI
from tracekit.errors import TraceReadError
from tracekit.events import ErrorInfo
from tracekit.tree.fold import (
    FOLD_AT,
    Folder,
    count_steps,
    describe_folded,
    needs_folding,
    opened_steps,
)
from tracekit.tree.model import AgentStep, NodeStep, Step
from tracekit.tree.why import why_text

__all__ = [
    "ForestLike",
    "IntegrityLike",
    "RunLike",
    "describe_agent_tree",
    "describe_bad_lines",
    "describe_forest",
    "describe_integrity",
    "describe_run_header",
]

_NO_DURATION: Final = frozenset({"refused", "running", "pending"})
_FAILED: Final = frozenset({"error", "refused", "cancelled"})
_SHOWN: Final = 3  # examples named per line of a report
# Past this many levels indentation stops growing (a 100,000-deep chain would
# print 10 GB of spaces); each deeper line says its depth instead.
_MAX_INDENT: Final = 100


# What the forest renderers read. The forest (tracekit.tree.forest) prints its
# trees with this module, so this module names only the fields it reads and
# never imports the forest: the two would import each other.
class RunLike(Protocol):
    """One tree of a forest, as its header reads it (:class:`tracekit.tree.forest.RunTree`)."""

    @property
    def runId(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def agent(self) -> str | None: ...
    @property
    def ok(self) -> bool | None: ...
    @property
    def status(self) -> str | None: ...
    @property
    def durationMs(self) -> float | None: ...
    @property
    def failure(self) -> str | None: ...
    @property
    def error(self) -> ErrorInfo | None: ...
    @property
    def cycle(self) -> Sequence[str] | None: ...
    @property
    def steps(self) -> Sequence[Step]: ...


class IntegrityLike(Protocol):
    """What was odd in a trace (:class:`tracekit.tree.forest.Integrity`)."""

    @property
    def orphanRuns(self) -> Sequence[str]: ...
    @property
    def exitsWithoutEnter(self) -> Sequence[str]: ...
    @property
    def entersWithoutExit(self) -> Sequence[str]: ...
    @property
    def duplicates(self) -> int: ...
    @property
    def conflicts(self) -> Sequence[str]: ...
    @property
    def cycles(self) -> Sequence[Sequence[str]]: ...
    @property
    def sharedRuns(self) -> Sequence[str]: ...


class ForestLike(Protocol):
    """Every tree of a trace (:class:`tracekit.tree.forest.Forest`)."""

    @property
    def runs(self) -> Sequence[RunLike]: ...
    def find(self, run_id: str) -> RunLike | None:
        """The tree of ``run_id``: a root's, or a child run's subtree."""


def _deep_pad(depth: int) -> str:
    return "  " * _MAX_INDENT + f"[depth {depth}] "


def _paint(text: str, code: str | None, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color and code else text


def _error_text(status: str, error: ErrorInfo | None, steps: Sequence[Step] = ()) -> str:
    if error is None or status == "ok":
        return status
    why = why_text(error, steps) if steps else None
    text = f"{status} {why or escape(error.code)}"
    if error.chain:
        text += ": " + " -> ".join(escape(name) for name in error.chain)
    return text


def _agent_head(node: str | None, agent: str) -> str:
    """``delegate -> sql (``: the caller's node (its own name) and the agent."""
    caller = escape(node.rpartition("/")[2]) + " " if node else ""
    return f"{caller}-> {escape(agent)} ("


def _agent_tail(step: AgentStep, color: bool) -> str:
    """``ok, 11ms)`` and any mark: the kind unless delegate, status, duration."""
    details: list[str] = [] if step.kind == "delegate" else [step.kind]
    details.append(
        _paint(
            _error_text(step.status, step.error, step.steps), STATUS_ANSI.get(step.status), color
        )
    )
    if step.durationMs is not None and step.status not in _NO_DURATION:
        details.append(format_ms(step.durationMs))
    tail = ", ".join(details) + ")"
    if step.mark:
        tail += " " + _paint(f"[{escape(step.mark)}]", "33", color)
    return tail


class _AgentLines:
    """Agent lines, memoised by their parts: a big trace repeats a few agents,
    nodes, kinds and durations hundreds of thousands of times (measured: 4x
    faster than formatting each line; one key for the whole line, not one for
    its head and one for its tail, saved a further 0.1 s on 250,000 lines)."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self.heads: dict[tuple[str | None, str], str] = {}
        self.lines: dict[tuple[str | None, str, str, str, float | None], str] = {}

    def __call__(self, step: AgentStep) -> str:
        if step.error is not None or step.mark is not None:  # rare; their text varies
            return self._head(step) + _agent_tail(step, self.color)
        key = (step.node, step.agent, step.kind, step.status, step.durationMs)
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = self._head(step) + _agent_tail(step, self.color)
        return line

    def _head(self, step: AgentStep) -> str:
        key = (step.node, step.agent)
        head = self.heads.get(key)
        if head is None:
            head = self.heads[key] = _agent_head(step.node, step.agent)
        return head


def _node_line(step: NodeStep, color: bool) -> str:
    name = escape(step.id)
    if step.ok is False:
        word = "error" if step.error is None else f"error {escape(step.error.code)}"
        name += " (" + _paint(word, "31", color) + ")"
    return name


def _is_failure(step: Step) -> bool:
    if type(step) is NodeStep:
        return step.ok is False
    return step.status in _FAILED  # type: ignore[union-attr]


def _failure_paths(tree: Sequence[Step]) -> set[int]:
    """Ids of the steps that fail or lead to a failure (post-order, no recursion)."""
    order: list[tuple[Step, AgentStep | None]] = []
    stack: list[tuple[Step, AgentStep | None]] = [(s, None) for s in reversed(tree)]
    while stack:
        step, parent = stack.pop()
        order.append((step, parent))
        if type(step) is AgentStep:
            stack.extend((child, step) for child in reversed(step.steps))
    keep: set[int] = set()
    for step, parent in reversed(order):  # children before their parent
        if id(step) in keep or _is_failure(step):
            keep.add(id(step))
            if parent is not None:
                keep.add(id(parent))
    return keep


def describe_agent_tree(
    tree: Sequence[Step],
    *,
    max_depth: int | None = None,
    errors_only: bool = False,
    color: bool = False,
    indent: int = 0,
    show: Collection[str] = (),
    fold: bool | None = None,
    expand: Sequence[str] = (),
) -> str:
    """Print a tree as the seed's ``describeAgentTree`` does; never raises on odd data.

    Args:
        tree: the steps, as :func:`tracekit.agent_tree` returns them.
        max_depth: show steps down to this depth (0 is the top level); a cut
            invocation says how many steps it hides.
        errors_only: show only the paths that lead to a failure.
        color: colour the status words with ANSI escapes.
        indent: levels to indent everything by (a forest's trees sit under headers).
        show: hidden kinds of step to show: ``llm`` shows the model turns.
        fold: fold repeated sibling subtrees (:mod:`tracekit.tree.fold`); None
            folds the sibling lists longer than ``FOLD_AT`` if there are any.
        expand: paths of folded steps to show one by one (``batch[2]/sql``).

    Raises:
        TracekitError: an ``expand`` path that names no step.

    Example:
        >>> from tracekit.tree import NodeStep
        >>> describe_agent_tree([NodeStep(id="decide"), NodeStep(id="reply")])
        'decide\\nreply'
    """
    keep = _failure_paths(tree) if errors_only else None
    hide_llm = "llm" not in show
    agent_line = _AgentLines(color)
    if fold is not False and (fold or expand or needs_folding(tree)):
        opened = opened_steps(tree, expand, strict=not indent)
        folder = Folder(0 if fold else FOLD_AT, opened, keep, hide_llm=hide_llm)
        return describe_folded(
            tree,
            line=lambda s: agent_line(s) if type(s) is AgentStep else _node_line(s, color),  # type: ignore[arg-type]
            pad=lambda d: "  " * (d + indent) if d + indent <= _MAX_INDENT else _deep_pad(d),
            folder=folder,
            color=color,
            max_depth=max_depth,
        )
    out: list[str] = []
    append = out.append
    stack: list[tuple[Iterator[Step], int]] = [(iter(tree), indent)]
    while stack:
        steps, level = stack[-1]
        pad = "  " * level if level <= _MAX_INDENT else _deep_pad(level - indent)
        for step in steps:  # resumed where it stopped after each descent
            if keep is not None and id(step) not in keep:
                continue
            if type(step) is NodeStep:
                if hide_llm and step.call == "llm":
                    continue
                name = step.id
                if step.ok is False or not name.isprintable():
                    name = _node_line(step, color)
                append(pad + name)
                continue
            line = pad + agent_line(step)  # type: ignore[arg-type]
            children = step.steps  # type: ignore[union-attr]
            if not children:
                append(line)
            elif max_depth is not None and level - indent >= max_depth:
                append(f"{line} [{count_steps(children)} steps hidden]")
            else:
                append(line)
                stack.append((iter(children), level + 1))
                break
        else:
            stack.pop()
    return "\n".join(out)


def describe_run_header(run: RunLike, color: bool = False) -> str:
    """The header line of one tree of a forest: run, agent, status, duration.

    Example:
        >>> from tracekit.tree.forest import AgentTree, RunTree
        >>> run = RunTree(runId="r1", kind="root", agent="front", status="ok", durationMs=40, steps=AgentTree())
        >>> describe_run_header(run)
        'run r1: front (ok, 40ms)'
    """
    run_id = escape(run.runId or "")
    if run.kind == "orphan":
        return (
            f"orphans: run {run_id} is not in this trace, but these invocations name it as parent"
        )
    if run.kind == "parentless":
        return "invocations without a parent run"
    agent = escape(run.agent) if run.agent else "agent unknown"
    if run.status is None:
        details = ["no run.start/run.end"]
    else:
        status = _error_text(run.status, run.error, run.steps)
        details = [_paint(status, STATUS_ANSI.get(run.status), color)]
        if run.durationMs is not None:
            details.append(format_ms(run.durationMs))
        if run.failure:
            details.append(f"failure: {escape(run.failure)}")
    header = f"run {run_id}: {agent} ({', '.join(details)})"
    if run.kind == "cycle" and run.cycle:
        header += " [cycle in parent links: " + " -> ".join(map(escape, run.cycle)) + "]"
    return header


def describe_forest(
    forest: ForestLike,
    *,
    run_id: str | None = None,
    max_depth: int | None = None,
    errors_only: bool = False,
    color: bool = False,
    show: Collection[str] = (),
    fold: bool | None = None,
    expand: Sequence[str] = (),
) -> str:
    """Print every tree of a forest; headers appear when there is more than one.

    A single root run prints exactly as :func:`describe_agent_tree`; with
    several trees (or an orphan or a cycle), each gets a header line and its
    steps are indented under it.

    Raises:
        KeyError: ``run_id`` names no run of the forest.
    """
    runs: Sequence[RunLike]
    if run_id is not None:
        found = forest.find(run_id)
        if found is None:
            raise KeyError(run_id)
        runs = [found]
    else:
        runs = forest.runs
    options: dict[str, Any] = {"max_depth": max_depth, "errors_only": errors_only, "color": color}
    options |= {"show": show, "fold": fold, "expand": expand}
    if len(runs) == 1 and runs[0].kind in ("root", "subtree"):
        return describe_agent_tree(runs[0].steps, **options)
    blocks = []
    for run in runs:
        body = describe_agent_tree(run.steps, indent=1, **options)
        if errors_only and not body and run.ok is not False:
            continue  # nothing failed in this run
        header = _paint(describe_run_header(run, color), "1", color)
        blocks.append(header + ("\n" + body if body else ""))
    return "\n\n".join(blocks)


def _examples(items: Sequence[str]) -> str:
    shown = ", ".join(escape(item) for item in items[:_SHOWN])
    more = len(items) - _SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def describe_integrity(integrity: IntegrityLike) -> list[str]:
    """A short report of what was odd in a trace, one line per kind; empty if clean.

    Example:
        >>> from tracekit.tree.forest import Integrity
        >>> describe_integrity(Integrity(duplicates=2))
        ['integrity: 2 duplicate records, counted once']
    """
    i = integrity
    lines = []
    if i.orphanRuns:
        lines.append(
            f"{_plural(len(i.orphanRuns), 'missing parent run', 'missing parent runs')}"
            f" (orphans shown under their own header): {_examples(i.orphanRuns)}"
        )
    if i.exitsWithoutEnter:
        what = _plural(len(i.exitsWithoutEnter), "exit without enter", "exits without enter")
        lines.append(f"{what} (kept, marked): {_examples(i.exitsWithoutEnter)}")
    if i.entersWithoutExit:
        what = _plural(len(i.entersWithoutExit), "enter without exit", "enters without exit")
        lines.append(f"{what} (running, or the writer crashed): {_examples(i.entersWithoutExit)}")
    if i.duplicates:
        lines.append(
            f"{_plural(i.duplicates, 'duplicate record', 'duplicate records')}, counted once"
        )
    if i.conflicts:
        what = _plural(len(i.conflicts), "id given twice", "ids given twice")
        lines.append(f"{what} with different content (first kept): {_examples(i.conflicts)}")
    for circle in i.cycles:
        lines.append("cycle in parent links (cut open): " + " -> ".join(map(escape, circle)))
    if i.sharedRuns:
        what = _plural(len(i.sharedRuns), "child run", "child runs")
        lines.append(f"{what} claimed by two invocations: {_examples(i.sharedRuns)}")
    return [f"integrity: {line}" for line in lines]


def describe_bad_lines(bad_lines: Sequence[TraceReadError], lines_read: int) -> list[str]:
    """Say how many lines were skipped and name the first few as ``file:line: reason``.

    Example:
        >>> describe_bad_lines([TraceReadError("t.jsonl", 3, "{", "not JSON")], 10)
        ['skipped 1 bad line of 10 (the tree shows every good line):', '  t.jsonl:3: not JSON']
        >>> describe_bad_lines([TraceReadError("t.gz", 11, "", "gzip stream damaged")], 10)[0]
        'read 10 lines, then the stream ended damaged (the tree shows every good line):'
    """
    if not bad_lines:
        return []
    # a damaged stream's end is no line read: it is named after the last line, not counted
    bad = sum(1 for error in bad_lines if error.line <= lines_read)
    head = f"skipped {_plural(bad, 'bad line', 'bad lines')} of {lines_read}"
    if bad < len(bad_lines):
        head = f"read {_plural(lines_read, 'line', 'lines')}" + (
            f", skipped {_plural(bad, 'bad line', 'bad lines')}" if bad else ""
        )
        head += ", then the stream ended damaged"
    lines = [f"{head} (the tree shows every good line):"]
    lines.extend(f"  {escape(str(error))}" for error in bad_lines[:_SHOWN])
    if len(bad_lines) > _SHOWN:
        lines.append(f"  ... and {len(bad_lines) - _SHOWN} more")
    return lines
