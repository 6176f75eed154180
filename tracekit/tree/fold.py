"""Folding: repeated sibling subtrees of the same shape shown as one line.

A run that calls ``sql`` 312 times from one place prints 312 nearly equal
lines; folded, it prints one: ``delegate -> sql (ok) x312, 2 errors``. Two
sibling subtrees have the same *shape* when they have the same agent, caller
node, kind and mark, and their steps have the same shapes in the same order
(statuses and durations do not count: they are summed up on the line).

A folded line is a :class:`Group`: the steps it stands for, all of one shape.
Its children are groups too: the k-th steps of every member, merged with the
other positions of the same shape when that list is long. So every line of
a folded tree sums up its steps' statuses, at any depth, and the whole walk
is linear in the size of the tree (no recursion, no quadratic sibling scan).

A sibling list folds when it holds more than ``threshold`` steps
(:data:`FOLD_AT` by default; 0 folds every repeat). ``--expand PATH`` shows
the steps a path names one by one: a PATH is agent names (or node step
names) joined by ``/``, each with an optional 0-based index among the
siblings of that name, such as ``sql`` (every ``sql`` at the top level) or
``batch[2]/sql`` (the ``sql`` calls of the third ``batch``).

Example:
    >>> from tracekit.tree.model import AgentStep
    >>> def sql(status):
    ...     return AgentStep(agent="sql", node="delegate", kind="delegate", runId="c",
    ...                      parentRunId="r", invocationId="i", ok=status == "ok",
    ...                      status=status, durationMs=1.0, steps=[])
    >>> tree = [sql("ok")] * 310 + [sql("error")] * 2
    >>> [group_text(g) for g in Folder().top(tree)]
    ['delegate -> sql (ok) x312, 2 errors']
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, repeat
from operator import attrgetter, not_
from typing import Any, Final

from tracekit._util.text import escape
from tracekit._util.theme import STATUS_ANSI
from tracekit.errors import TracekitError
from tracekit.tree.model import AgentStep, NodeStep, Step

__all__ = [
    "FOLD_AT",
    "Folder",
    "Group",
    "Shapes",
    "describe_folded",
    "group_text",
    "needs_folding",
    "opened_steps",
    "parse_path",
    "status_counts",
    "status_summary",
]

#: A sibling list longer than this folds by default.
FOLD_AT: Final = 20
_STATUS: Final = attrgetter("status")
_STEPS: Final = attrgetter("steps")
_ID: Final = attrgetter("id")
# A node step is keyed by its name (a str), an agent step by a tuple: they never collide.
_LEAF: Final = attrgetter("agent", "node", "kind", "mark")
_LEAF_STATUS: Final = attrgetter("agent", "node", "kind", "mark", "status")
_NODE_STATUS: Final = attrgetter("id", "ok")
# Lists up to this long are keyed by a plain loop (their key has its own form:
# lists of different lengths never share a shape anyway).
_SMALL: Final = 16
_PLURAL: Final = {"error": "errors"}


class Shapes:
    """Each subtree's shape as a small int; equal ints, equal shapes.

    A leaf's key is its own fields; a subtree's id is memoised by the step's
    ``id()`` (the tree outlives this object), computed in post-order with a
    stack, so a chain of any depth works. A run calls a million leaves, so
    their keys are made by C loops (``map`` over ``attrgetter``), not one
    Python call a step (measured: 1.8 s to 0.3 s for 1,000,000 invocations).

    Example:
        >>> shapes = Shapes()
        >>> shapes.of(NodeStep("a")) == shapes.of(NodeStep("a")) != shapes.of(NodeStep("b"))
        True
    """

    def __init__(self, *, statuses: bool = False) -> None:
        self._ids: defaultdict[object, int] = defaultdict(itertools.count().__next__)
        self._memo: dict[int, int] = {}
        # With statuses, two subtrees match only if every step ended alike too
        # (the run comparison pairs those first).
        self._leaf = _LEAF_STATUS if statuses else _LEAF
        self._node = _NODE_STATUS if statuses else _ID

    def _kids(self, steps: Sequence[Step]) -> tuple[object, ...]:
        """A key for the shapes of a list of steps whose subtrees are all memoised.

        The agent steps' ids, the node steps' names, and where each kind
        sits (a mask): all made by C loops.
        """
        get, leaf, named = self._ids.__getitem__, self._leaf, self._node
        if len(steps) <= _SMALL:  # a plain loop beats building the C loops' lists
            memo = self._memo
            return tuple(
                [
                    named(s)
                    if type(s) is NodeStep
                    else memo[id(s)]
                    if s.steps  # type: ignore[union-attr]
                    else get(leaf(s))
                    for s in steps
                ]
            )
        mask = list(map(isinstance, steps, repeat(AgentStep)))
        every = all(mask)
        agents: Sequence[Any] = steps if every else list(compress(steps, mask))
        if any(map(_STEPS, agents)):
            memo = self._memo
            keys = tuple([memo[id(s)] if s.steps else get(leaf(s)) for s in agents])
        else:
            keys = tuple(map(get, map(leaf, agents)))
        if every:
            return (keys,)
        return keys, tuple(map(named, compress(steps, map(not_, mask)))), bytes(mask)

    def of(self, step: Step) -> int:
        """The shape id of ``step`` and everything below it."""
        if type(step) is NodeStep:
            return self._ids[self._node(step)]
        if not step.steps:  # type: ignore[union-attr]
            return self._ids[self._leaf(step)]
        memo = self._memo
        found = memo.get(id(step))
        if found is not None:
            return found
        stack: list[tuple[AgentStep, bool]] = [(step, False)]  # type: ignore[list-item]
        while stack:
            top, ready = stack.pop()
            if ready:
                memo[id(top)] = self._ids[(*self._leaf(top), *self._kids(top.steps))]
                continue
            stack.append((top, True))
            steps = top.steps
            if len(steps) <= _SMALL:
                stack.extend([(s, False) for s in steps if type(s) is AgentStep and s.steps])
                continue
            agents: list[Any] = list(compress(steps, map(isinstance, steps, repeat(AgentStep))))
            stack.extend(zip(compress(agents, map(_STEPS, agents)), repeat(False)))
        return memo[id(step)]


class Group:
    """One line of a folded tree: ``steps`` of one shape, ``repeat`` siblings of one list.

    ``repeat`` is how many siblings of a single parent the line stands for;
    under a folded parent, ``steps`` holds those of every member of it.
    """

    __slots__ = ("repeat", "steps")

    def __init__(self, steps: list[Step], repeat: int) -> None:
        self.steps = steps
        self.repeat = repeat

    @property
    def first(self) -> Step:
        """The step whose names the line shows."""
        return self.steps[0]


def status_counts(steps: Sequence[Step]) -> Counter[str]:
    """How many steps end in each status; a node step is ``ok`` or ``error``.

    Example:
        >>> status_counts([NodeStep("a", ok=False), NodeStep("a")])
        Counter({'error': 1, 'ok': 1})
    """
    if type(steps[0]) is NodeStep:
        return Counter("error" if s.ok is False else "ok" for s in steps)
    return Counter(map(_STATUS, steps))


def status_summary(counts: Counter[str]) -> tuple[str, str]:
    """The main status, and the others as ``, 2 errors, 1 refused``.

    Example:
        >>> status_summary(Counter({"ok": 310, "error": 2}))
        ('ok', ', 2 errors')
    """
    ranked = counts.most_common()
    rest = "".join(f", {n} {_PLURAL.get(s, s) if n != 1 else s}" for s, n in sorted(ranked[1:]))
    return ranked[0][0], rest


def _paint(text: str, code: str | None, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color and code else text


def group_text(group: Group, color: bool = False) -> str:
    """A folded line: ``delegate -> sql (ok) x312, 2 errors``; names escaped.

    Example:
        >>> group_text(Group([NodeStep("decide")] * 3, 3))
        'decide x3'
    """
    first = group.first
    main, rest = status_summary(status_counts(group.steps))
    times = f" x{group.repeat}" if group.repeat > 1 else ""
    if group.repeat > 1 and len(group.steps) != group.repeat:  # under a folded parent
        times += f" ({len(group.steps)} in all)"
    if type(first) is NodeStep:
        shown = "" if main == "ok" else " (" + _paint(main, STATUS_ANSI.get(main), color) + ")"
        return f"{escape(first.id)}{shown}{times}{rest}"
    step: AgentStep = first  # type: ignore[assignment]
    caller = escape(step.node.rpartition("/")[2]) + " " if step.node else ""
    details = [] if step.kind == "delegate" else [escape(step.kind)]
    details.append(_paint(main, STATUS_ANSI.get(main), color))
    return f"{caller}-> {escape(step.agent)} ({', '.join(details)}){times}{rest}"


def needs_folding(tree: Sequence[Step], threshold: int = FOLD_AT) -> bool:
    """Does any sibling list of the tree hold more than ``threshold`` steps?

    Example:
        >>> needs_folding([NodeStep("a")] * 21), needs_folding([NodeStep("a")] * 20)
        (True, False)
    """
    stack = [tree]
    while stack:
        steps = stack.pop()
        if len(steps) > threshold:
            return True
        stack.extend(s.steps for s in steps if type(s) is AgentStep and s.steps)
    return False


def parse_path(path: str) -> list[tuple[str, int | None]]:
    """``batch[2]/sql`` as ``[("batch", 2), ("sql", None)]``.

    Raises:
        TracekitError: an empty part, or an index that is not a number.

    Example:
        >>> parse_path("batch[2]/sql")
        [('batch', 2), ('sql', None)]
    """
    parts: list[tuple[str, int | None]] = []
    for part in path.split("/"):
        name, index = part, None
        if part.endswith("]") and "[" in part:
            name, _, number = part[:-1].rpartition("[")
            if not number.isdigit():
                raise TracekitError(
                    f"bad path {escape(path)!r}: [{escape(number)}] is not an index",
                    hint="A PATH is agent names joined by /, each with an optional [N] (from 0).",
                )
            index = int(number)
        if not name:
            raise TracekitError(
                f"bad path {escape(path)!r}: an empty name",
                hint="A PATH is agent names joined by /, such as batch[2]/sql.",
            )
        parts.append((name, index))
    return parts


def _name(step: Step) -> str:
    return step.agent if type(step) is AgentStep else step.id  # type: ignore[union-attr]


def opened_steps(tree: Sequence[Step], paths: Sequence[str], *, strict: bool = True) -> set[int]:
    """The ``id()`` of every step a path names, and of the steps on the way to it.

    ``strict=False`` passes over a path that names nothing here (a forest's
    other trees may hold it).

    Raises:
        TracekitError: a malformed path, or with ``strict`` one that names no step.

    Example:
        >>> len(opened_steps([NodeStep("a"), NodeStep("b")], ["a"]))
        1
    """
    opened: set[int] = set()
    for path in paths:
        levels: list[Sequence[Step]] = [tree]
        for depth, (name, index) in enumerate(parse_path(path)):
            found: list[Step] = []
            for steps in levels:
                named = [s for s in steps if _name(s) == name]
                found.extend(named if index is None else named[index : index + 1])
            if not found and not strict:
                break
            if not found:
                where = "/".join(p for p, _ in parse_path(path)[:depth]) or "the top level"
                raise TracekitError(
                    f"--expand {escape(path)}: no step {escape(name)}"
                    + (f"[{index}]" if index is not None else "")
                    + f" under {escape(where)}",
                    hint="A PATH is the agent names shown in the tree, joined by /.",
                )
            opened.update(map(id, found))
            levels = [s.steps for s in found if type(s) is AgentStep]
    return opened


class Folder:
    """Turns sibling lists into groups; see the module's docstring.

    Args:
        threshold: a list folds when longer than this (0: every repeat folds).
        opened: ``id()`` of steps always shown on their own (:func:`opened_steps`).
        keep: if given, only steps whose ``id()`` is in it are shown.
        hide_llm: leave out the model turns (``call == "llm"`` steps).
    """

    def __init__(
        self,
        threshold: int = FOLD_AT,
        opened: set[int] | None = None,
        keep: set[int] | None = None,
        *,
        hide_llm: bool = False,
    ) -> None:
        self.threshold = threshold
        self.opened = opened or set()
        self.keep = keep
        self.hide_llm = hide_llm
        self.shapes = Shapes()

    def top(self, tree: Sequence[Step]) -> list[Group]:
        """The top-level lines."""
        return self._fold([[s] for s in tree], len(tree) > self.threshold)

    def children(self, group: Group) -> list[Group]:
        """The lines under ``group``: its members' steps, position by position."""
        first = group.first
        if type(first) is not AgentStep or not first.steps:
            return []
        fold = len(first.steps) > self.threshold
        if len(group.steps) == 1:
            return self._fold([[s] for s in first.steps], fold)
        columns = zip(*(m.steps for m in group.steps), strict=True)  # type: ignore[union-attr]
        return self._fold([list(c) for c in columns], fold)

    def _fold(self, columns: list[list[Step]], fold: bool) -> list[Group]:
        keep, opened = self.keep, self.opened
        if self.hide_llm:  # a position is a model turn in every member of a group alike
            columns = [c for c in columns if getattr(c[0], "call", None) != "llm"]
        if keep is not None:
            columns = [k for k in ([s for s in c if id(s) in keep] for c in columns) if k]
        if not fold:
            return [Group(c, 1) for c in columns]
        shape = self.shapes.of
        out: list[Group] = []
        by_shape: dict[int, Group] = {}
        for column in columns:
            if len(column) == 1 and id(column[0]) in opened:
                out.append(Group(column, 1))
                continue
            key = shape(column[0])
            group = by_shape.get(key)
            if group is None:
                group = by_shape[key] = Group(column, 1)
                out.append(group)
            else:  # every column is a fresh list, so the first may grow in place
                group.steps.extend(column)
                group.repeat += 1
        if keep is not None:  # what is left of each position: count the steps shown
            for group in out:
                group.repeat = len(group.steps)
        return out

    def walk(
        self, tree: Sequence[Step], max_depth: int | None = None
    ) -> Iterator[tuple[int, Group]]:
        """Every line in order, with its depth (0 at the top), none deeper than ``max_depth``.

        Walked without recursion; a line's children are folded when it is left.
        """
        stack: list[tuple[Iterator[Group], int]] = [(iter(self.top(tree)), 0)]
        while stack:
            groups, depth = stack[-1]
            group = next(groups, None)
            if group is None:
                stack.pop()
                continue
            yield depth, group
            if max_depth is not None and depth >= max_depth:
                continue
            kids = self.children(group)
            if kids:
                stack.append((iter(kids), depth + 1))


def describe_folded(
    tree: Sequence[Step],
    *,
    line: Callable[[Step], str],
    pad: Callable[[int], str],
    folder: Folder,
    color: bool = False,
    max_depth: int | None = None,
) -> str:
    """The folded tree as text; ``line`` prints a step on its own, ``pad`` indents a depth.

    Example:
        >>> print(describe_folded([NodeStep("a")] * 3, line=lambda s: s.id,
        ...                       pad=lambda d: "  " * d, folder=Folder(threshold=0)))
        a x3
    """
    out: list[str] = []
    for depth, group in folder.walk(tree, max_depth):
        text = line(group.first) if len(group.steps) == 1 else group_text(group, color)
        if max_depth is not None and depth >= max_depth and folder.children(group):
            hidden = sum(count_steps(getattr(s, "steps", ())) for s in group.steps)
            out.append(f"{pad(depth)}{text} [{hidden} steps hidden]")
        else:
            out.append(pad(depth) + text)
    return "\n".join(out)


def count_steps(steps: Sequence[Step]) -> int:
    """Every step at and below ``steps``, walked without recursion."""
    total, stack = 0, [steps]
    while stack:
        level = stack.pop()
        total += len(level)
        stack.extend(s.steps for s in level if type(s) is AgentStep and s.steps)
    return total
