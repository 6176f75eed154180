"""Run comparison: align two delegation trees and say what was added, removed, changed or slower.

Invocations are aligned level by level: under a pair of aligned callers, an
invocation of run A is paired with one of run B made by the same agent from
the same caller node. Among several such siblings, the common head and tail
of the two lists (the same shape, :class:`tracekit.tree.fold.Shapes`, and the
same statuses all the way down, in order) pair first; in the rest, equal
subtrees pair first, then those of the same shape, in order, then the rest
in order. Whatever is left is ``added`` (only in B) or ``removed``
(only in A), once for its whole subtree. A pair whose status differs is a
``status`` change; one that took longer by more than the :class:`Slower`
threshold is ``slower``. Sibling order does not matter, and the pairing is
symmetric: what ``diff(a, b)`` finds added, ``diff(b, a)`` finds removed.

A change's ``path`` is the agents from the top down, joined by ``/``; a name
that more than one sibling shares gets its index among them (``sql[1]``),
counted in the run that holds the step (B for added, status and slower).
That is the PATH ``tracekit tree --expand`` takes. Node steps are not
compared: they are the runs' own steps, not delegations.

Example:
    >>> from tracekit.tree.model import AgentStep
    >>> def sql(status, ms):
    ...     return AgentStep(agent="sql", node="delegate", kind="delegate", runId="c",
    ...                      parentRunId="r", invocationId="i", ok=status == "ok",
    ...                      status=status, durationMs=ms, steps=[])
    >>> found = diff_steps([sql("ok", 10)], [sql("error", 400)])
    >>> [(c.change, c.path) for c in found.changes]
    [('status', 'sql'), ('slower', 'sql')]
    >>> diff_steps([sql("ok", 10)], [sql("ok", 10)]).changes
    []
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import msgspec

from tracekit._util.text import duration_ms, escape
from tracekit.errors import TracekitError
from tracekit.tree.diff_view import describe_diff, diff_to_html
from tracekit.tree.fold import Shapes
from tracekit.tree.model import AgentStep, Step
from tracekit.tree.why import why_text

if TYPE_CHECKING:
    from tracekit.tree.forest import RunTree

__all__ = [
    "Change",
    "ChangeKind",
    "RunDiff",
    "RunSide",
    "Side",
    "Slower",
    "diff_runs",
    "diff_steps",
    "run_side",
]

ChangeKind: TypeAlias = Literal["added", "removed", "status", "slower"]
_NO_DURATION: Final = frozenset({"refused", "running", "pending"})
_ENCODER: Final = msgspec.json.Encoder()
_RANK: Final = {"removed": 0, "added": 1, "pair": 2}  # at one position: what went, then what came


class Slower(msgspec.Struct, frozen=True, kw_only=True):
    """When a pair counts as slower: by at least ``ratio`` (0.5 is +50%) and ``ms``.

    Either may be None (not checked). The default, +50% and +20 ms, keeps the
    jitter of millisecond calls out.

    Example:
        >>> Slower.parse("50%"), Slower.parse("200ms")
        (Slower(ratio=0.5, ms=None), Slower(ratio=None, ms=200.0))
        >>> Slower().exceeded(10.0, 40.0), Slower().exceeded(100.0, 140.0)
        (True, False)
    """

    ratio: float | None = 0.5
    ms: float | None = 20.0

    @classmethod
    def parse(cls, text: str) -> Slower:
        """``50%`` (relative) or a duration such as ``200ms``, ``2s`` (absolute).

        Raises:
            TracekitError: neither a percentage nor a duration.
        """
        spelled = text.strip()
        if spelled.endswith("%"):
            try:
                share = float(spelled[:-1])
            except ValueError:
                share = -1.0
            if share >= 0:
                return cls(ratio=share / 100, ms=None)
        else:
            ms = duration_ms(spelled, bare=False)
            if ms is not None and ms >= 0:
                return cls(ratio=None, ms=ms)
        raise TracekitError(
            f"--slower {escape(text)!r}: not a percentage or a duration",
            hint="Say 50% (half as long again) or 200ms, 2s.",
        )

    def exceeded(self, before: float, after: float) -> bool:
        """Did ``after`` take longer than ``before`` by more than the threshold?"""
        if after <= before:
            return False
        if self.ms is not None and after - before < self.ms:
            return False
        return self.ratio is None or after >= before * (1 + self.ratio)

    def __str__(self) -> str:
        parts = [f"+{self.ratio * 100:g}%"] if self.ratio is not None else []
        parts += [f"+{self.ms:g}ms"] if self.ms is not None else []
        return " and ".join(parts) or "any"


class Side(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One run's invocation of a change: its id, status, duration and error code.

    ``why`` names where a wrapped failure began (``AGENT_FAILED <- TIMEOUT in
    refunds "..."``, :func:`tracekit.tree.why.why_text`).
    """

    invocationId: str
    status: str
    durationMs: float | None = None
    errorCode: str | None = None
    why: str | None = None


class Change(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One difference: what, where (``path``), and each run's side of it.

    ``invocations`` counts the invocations of an added or removed subtree.
    """

    change: ChangeKind
    path: str
    agent: str
    node: str | None
    kind: str
    a: Side | None = None
    b: Side | None = None
    invocations: int = 1


class RunSide(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a compared run's header says."""

    runId: str | None = None
    agent: str | None = None
    status: str | None = None
    durationMs: float | None = None
    source: str | None = None


class RunDiff(msgspec.Struct, kw_only=True):
    """Two runs compared: each run's header, the threshold and the changes.

    ``str(diff)`` is the text ``tracekit diff`` prints; Jupyter shows its
    HTML table (:mod:`tracekit.tree.diff_view`).
    """

    a: RunSide
    b: RunSide
    slower: Slower
    changes: list[Change]

    def counts(self) -> dict[str, int]:
        """How many changes of each kind: ``{"added": 1, ...}``, every kind present."""
        found = Counter(c.change for c in self.changes)
        return {kind: found[kind] for kind in ("added", "removed", "status", "slower")}

    def of(self, kind: ChangeKind) -> list[Change]:
        """The changes of one kind."""
        return [c for c in self.changes if c.change == kind]

    def to_json(self) -> bytes:
        """``{"a", "b", "slower", "counts", "changes"}`` as JSON."""
        body = _ENCODER.encode(self)
        return body[:-1] + b',"counts":' + _ENCODER.encode(self.counts()) + b"}"

    def __str__(self) -> str:
        return describe_diff(self)

    def _repr_html_(self) -> str:
        return diff_to_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def _own(node: str | None) -> str | None:
    return node.rpartition("/")[2] if node else node


def _side(step: AgentStep) -> Side:
    code = step.error.code if step.error is not None else None
    shown = step.durationMs if step.status not in _NO_DURATION else None
    why = why_text(step.error, step.steps, plain=True) if step.error is not None else None
    return Side(
        invocationId=step.invocationId,
        status=step.status,
        durationMs=shown,
        errorCode=code,
        why=why,
    )


def _segments(steps: Sequence[AgentStep]) -> dict[int, str]:
    """Each step's path segment: its agent, and its index where the name repeats."""
    totals = Counter(s.agent for s in steps)
    seen: Counter[str] = Counter()
    out = {}
    for step in steps:
        name = step.agent
        out[id(step)] = f"{name}[{seen[name]}]" if totals[name] > 1 else name
        seen[step.agent] += 1
    return out


def _invocations(step: AgentStep) -> int:
    total, stack = 0, [step]
    while stack:
        top = stack.pop()
        total += 1
        stack.extend(s for s in top.steps if type(s) is AgentStep)
    return total


def _by_key(
    xs: list[AgentStep], ys: list[AgentStep], key: Any
) -> tuple[list[tuple[AgentStep, AgentStep]], list[AgentStep], list[AgentStep]]:
    """Pair the k-th step of each key in ``xs`` with the k-th of that key in ``ys``."""
    waiting: dict[int, list[AgentStep]] = {}
    for y in reversed(ys):
        waiting.setdefault(key(y), []).append(y)
    pairs: list[tuple[AgentStep, AgentStep]] = []
    rest_x: list[AgentStep] = []
    taken: set[int] = set()
    for x in xs:
        queue = waiting.get(key(x))
        if queue:
            y = queue.pop()
            pairs.append((x, y))
            taken.add(id(y))
        else:
            rest_x.append(x)
    return pairs, rest_x, [y for y in ys if id(y) not in taken]


def _pair(
    xs: list[AgentStep], ys: list[AgentStep], shape: Any, same: Any
) -> tuple[list[tuple[AgentStep, AgentStep]], list[AgentStep], list[AgentStep]]:
    """Pair same-named siblings; symmetric by construction.

    ``same`` keys a subtree by its shape and every status in it. The common
    head and tail of the two lists (``same`` equal, in order) pair first, so
    one call removed from the middle of 999 shifts nothing. In what is left,
    equal subtrees pair (the k-th with the k-th); they are anchors, and the
    steps left between the same two anchors pair next (same shape first, then
    in order), then those of the same shape anywhere, then the rest in order.
    """
    kx, ky = [same(x) for x in xs], [same(y) for y in ys]
    n, m = len(xs), len(ys)
    head = 0
    while head < n and head < m and kx[head] == ky[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and kx[n - 1 - tail] == ky[m - 1 - tail]:
        tail += 1
    pairs = list(zip(xs[:head], ys[:head], strict=True))
    pairs += zip(xs[n - tail :], ys[m - tail :], strict=True)
    mid_x, mid_y = xs[head : n - tail], ys[head : m - tail]
    equal, xs, ys = _by_key(mid_x, mid_y, same)
    pairs += equal
    if xs and ys:
        gap_x, gap_y = _gaps(mid_x, [x for x, _ in equal]), _gaps(mid_y, [y for _, y in equal])
        near, xs, ys = _by_key(xs, ys, lambda s: (gap_x.get(id(s), gap_y.get(id(s))), shape(s)))
        close, xs, ys = _by_key(xs, ys, lambda s: gap_x.get(id(s), gap_y.get(id(s))))
        alike, xs, ys = _by_key(xs, ys, shape)
        pairs += near + close + alike
    pairs.extend(zip(xs, ys, strict=False))
    k = min(len(xs), len(ys))
    return pairs, xs[k:], ys[k:]


def _gaps(steps: list[AgentStep], anchors: list[AgentStep]) -> dict[int, int]:
    """For each step, how many anchors come before it in ``steps``."""
    anchored = set(map(id, anchors))
    out, seen = {}, 0
    for step in steps:
        if id(step) in anchored:
            seen += 1
        else:
            out[id(step)] = seen
    return out


# (position, what, step of A, step of B, path in A, path in B); "removed" and
# "added" items carry their one step on both sides.
_Item: TypeAlias = tuple[int, str, AgentStep, AgentStep, str, str]


class _Aligner:
    def __init__(self, slower: Slower) -> None:
        self.slower = slower
        self.shape = Shapes().of
        self.same = Shapes(statuses=True).of
        self.changes: list[Change] = []

    def run(self, a: Sequence[Step], b: Sequence[Step]) -> list[Change]:
        """Walk both trees in pre-order (a stack, not recursion): each change in tree order."""
        stack: list[_Item] = list(reversed(self._level(a, b, "", "")))
        while stack:
            _, what, x, y, path_a, path_b = stack.pop()
            if what == "removed":
                self._add("removed", x, path_a, a=_side(x), count=_invocations(x))
            elif what == "added":
                self._add("added", y, path_b, b=_side(y), count=_invocations(y))
            else:
                self._compare(x, y, path_b)
                if x.steps or y.steps:
                    stack.extend(
                        reversed(self._level(x.steps, y.steps, path_a + "/", path_b + "/"))
                    )
        return self.changes

    def _level(self, la: Sequence[Step], lb: Sequence[Step], pa: str, pb: str) -> list[_Item]:
        """One level's pairs, removals and additions, in the order of the steps."""
        xs = [s for s in la if type(s) is AgentStep]
        ys = [s for s in lb if type(s) is AgentStep]
        seg_a, seg_b = _segments(xs), _segments(ys)
        at_a = {id(s): n for n, s in enumerate(xs)}
        at_b = {id(s): n for n, s in enumerate(ys)}
        groups: dict[tuple[str, str | None], tuple[list[AgentStep], list[AgentStep]]] = {}
        for side, steps in ((0, xs), (1, ys)):
            for s in steps:
                groups.setdefault((s.agent, _own(s.node)), ([], []))[side].append(s)
        items: list[_Item] = []
        for left, right in groups.values():
            pairs, removed, added = _pair(left, right, self.shape, self.same)
            items += [(at_a[id(x)], "removed", x, x, pa + seg_a[id(x)], "") for x in removed]
            items += [(at_b[id(y)], "added", y, y, "", pb + seg_b[id(y)]) for y in added]
            items += [
                (at_b[id(y)], "pair", x, y, pa + seg_a[id(x)], pb + seg_b[id(y)]) for x, y in pairs
            ]
        items.sort(key=lambda item: (item[0], _RANK[item[1]]))
        return items

    def _compare(self, x: AgentStep, y: AgentStep, path: str) -> None:
        before, after = _side(x), _side(y)
        if before.status != after.status or before.errorCode != after.errorCode:
            self._add("status", y, path, a=before, b=after)
        if (
            before.durationMs is not None
            and after.durationMs is not None
            and self.slower.exceeded(before.durationMs, after.durationMs)
        ):
            self._add("slower", y, path, a=before, b=after)

    def _add(
        self,
        kind: ChangeKind,
        step: AgentStep,
        path: str,
        *,
        a: Side | None = None,
        b: Side | None = None,
        count: int = 1,
    ) -> None:
        self.changes.append(
            Change(
                change=kind,
                path=path,
                agent=step.agent,
                node=step.node,
                kind=step.kind,
                a=a,
                b=b,
                invocations=count,
            )
        )


def diff_steps(
    a: Sequence[Step],
    b: Sequence[Step],
    *,
    slower: Slower | None = None,
    a_side: RunSide | None = None,
    b_side: RunSide | None = None,
) -> RunDiff:
    """Compare two trees (lists of steps); see the module's docstring for the alignment.

    Args:
        a, b: the steps of the run before and of the run after.
        slower: the threshold for ``slower`` changes (default :class:`Slower`).
        a_side, b_side: what to say about each run in the result's header.
    """
    threshold = slower if slower is not None else Slower()
    changes = _Aligner(threshold).run(a, b)
    return RunDiff(a=a_side or RunSide(), b=b_side or RunSide(), slower=threshold, changes=changes)


def run_side(run: RunTree, source: str | None = None) -> RunSide:
    """The header of a :class:`~tracekit.tree.forest.RunTree`, for a diff."""
    return RunSide(
        runId=run.runId,
        agent=run.agent,
        status=run.status,
        durationMs=run.durationMs,
        source=source,
    )


def diff_runs(
    a: RunTree,
    b: RunTree,
    *,
    slower: Slower | None = None,
    sources: tuple[str | None, str | None] = (None, None),
) -> RunDiff:
    """Compare two runs of forests (:meth:`~tracekit.tree.forest.Forest.run`).

    Example:
        >>> from tracekit.tree.forest import AgentTree, RunTree
        >>> run = RunTree(runId="r", kind="root", steps=AgentTree())
        >>> diff_runs(run, run).counts()
        {'added': 0, 'removed': 0, 'status': 0, 'slower': 0}
    """
    return diff_steps(
        a.steps,
        b.steps,
        slower=slower,
        a_side=run_side(a, sources[0]),
        b_side=run_side(b, sources[1]),
    )
