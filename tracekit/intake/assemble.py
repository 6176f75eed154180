"""When a trace is complete: one group-by-trace policy for files, stdin and the collector.

Spans of one trace come spread over many lines, files, requests or server
restarts, in any order. A :class:`TraceAssembler` holds them by trace until
the trace looks complete, as the OpenTelemetry Collector's group-by-trace
processor does:

- **settle**: its root span has come, ended, and nothing of it came for
  ``settle`` ticks;
- **linger**: no root yet, and nothing of it came for ``linger`` ticks (the
  root may never come: a crashed parent, a sampled-out span);
- **limit**: more than ``max_pending`` spans held: the oldest traces go first.

Traces joined by a span link (a runtime that starts each agent turn in a
new trace and links it to the turn before) are one group: a group is ready
when each of its traces is, and its traces are taken together, so that the
edge rules see both sides of the link. A link into a trace already taken
reopens it.

A tick is whatever the caller counts in: documents read (a file) or seconds
(a live collector). Each trace remembers the first and last position its
spans came from (a line, a spool offset), so a collector checkpoints before
the first position still held. A trace taken (mapped) is remembered for a
while with its spans, so that a span arriving late reopens its trace and the
trace is mapped again whole (late spans join their trace; the records it
already gave are given again and the caller's keys drop them).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> def span(i, parent=""):
    ...     return Span("t", i, parent, i, 1, 2, {}, False, "", None)
    >>> assembler = TraceAssembler(settle=2)
    >>> assembler.add([span("child", "root")], position=1, now=0)
    >>> assembler.ready(now=5)  # no root: waits for the linger
    []
    >>> assembler.add([span("root")], position=2, now=5)
    >>> assembler.ready(now=7), sorted(assembler.take(["t"]))
    (['t'], [('t', 'child'), ('t', 'root')])
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracekit.intake.otlp.decode_json import Span

__all__ = ["TraceAssembler"]

Key = tuple[str, str]


@dataclass(slots=True)
class _Trace:
    spans: dict[str, Span] = field(default_factory=dict)
    first: int = 0  # the position of the first span held
    last: int = 0  # the position of the latest
    seen: float = 0.0  # when a span of it last came (in ticks)
    rooted: bool = False  # its root span has come, ended
    rooted_at: int = 0  # when it was rooted, counted: ready answers in that order


class TraceAssembler:
    """Hold spans by trace until each looks complete (settle, linger, limit).

    Args:
        settle: ticks a rooted trace stays open for late spans.
        linger: ticks a trace without a root waits before it is taken anyway.
        max_pending: spans held at most; past it the oldest half of the traces is ready.
        remember: traces taken that are kept (with their spans) so that a late
            span reopens its trace; 0 keeps none.
    """

    def __init__(
        self,
        *,
        settle: float = 64,
        linger: float = math.inf,
        max_pending: int = 1 << 62,
        remember: int = 0,
    ) -> None:
        self.settle = settle
        self.linger = linger
        self.max_pending = max_pending
        self.remember = remember
        self._traces: dict[str, _Trace] = {}
        self._taken: OrderedDict[str, dict[str, Span]] = OrderedDict()
        self._late: dict[str, dict[Key, Span]] = {}  # reopened trace -> its spans before
        self._linked: dict[str, set[str]] = {}  # held trace -> held traces it links with
        # Held traces whose root has come (settle applies), the least recently seen
        # first: ready() stops at the first one too recent, instead of walking them
        # all after every line of a file. (A set's order would vary from run to run.)
        self._rooted: dict[str, None] = {}
        self._roots = 0  # traces rooted so far: each one's rooted_at
        self._latest = -math.inf  # the latest tick given to add
        self._ordered = True  # whether ticks never went back (else ready() walks them all)
        self.pending = 0  # spans held
        self.reopened = 0  # traces a late span reopened

    def __contains__(self, trace: str) -> bool:
        return trace in self._traces

    def __len__(self) -> int:
        return len(self._traces)

    def add(self, spans: Iterable[Span], *, position: int, now: float) -> None:
        """Hold spans that came from ``position`` (their ``line``) at ``now``.

        A second copy of a span replaces the first only if it brings the end.
        """
        self._tick(now)
        traces, rooted = self._traces, self._rooted
        for span in spans:
            span.line = position
            state = traces.get(span.trace)
            if state is None:
                state = traces[span.trace] = self._open(span.trace, position)
            state.last = position
            if state.seen != now:
                state.seen = now
                if state.rooted:  # the most recently seen goes last
                    del rooted[span.trace]
                    rooted[span.trace] = None
            seen = state.spans.get(span.id)
            if seen is None:
                state.spans[span.id] = span
                self.pending += 1
            elif seen.end is None and span.end is not None:
                state.spans[span.id] = span
            if not span.parent and span.end is not None and not state.rooted:
                self._root(span.trace, state)
            if span.links:
                self._link(span, position, now)

    def _tick(self, now: float) -> None:
        if now < self._latest:
            self._ordered = False
        self._latest = max(self._latest, now)

    def _root(self, trace: str, state: _Trace) -> None:
        state.rooted = True
        self._roots += 1
        state.rooted_at = self._roots
        self._rooted[trace] = None

    def _link(self, span: Span, position: int, now: float) -> None:
        """Join the span's trace with the traces its links point into."""
        for other, _ in span.links:
            if other == span.trace or not other:
                continue
            if other not in self._traces and other in self._taken:  # reopen it: map both together
                state = self._traces[other] = self._open(other, position)
                state.seen = now
            if other in self._traces:
                self._linked.setdefault(span.trace, set()).add(other)
                self._linked.setdefault(other, set()).add(span.trace)

    def _open(self, trace: str, position: int) -> _Trace:
        state = _Trace(first=position, last=position)
        old = self._taken.pop(trace, None)
        if old is not None:  # a late span: the trace is mapped again, whole
            state.spans = dict(old)
            self._late[trace] = {(trace, i): s for i, s in old.items()}
            if any(not s.parent and s.end is not None for s in old.values()):
                self._root(trace, state)
            self.pending += len(old)
            self.reopened += 1
        return state

    def ready(self, *, now: float, final: bool = False, incomplete: bool = True) -> list[str]:
        """The traces that look complete at ``now``.

        Args:
            now: the current tick.
            final: the input has ended: every trace is ready, but see ``incomplete``.
            incomplete: with ``final``, whether traces without a root are ready
                too (a file's end) or stay held for the rest (a collector's stop).
        """
        if final:
            done = [t for t, s in self._traces.items() if incomplete or s.rooted]
        else:  # the rooted first: a file's reader asks after every line
            traces = self._traces
            done = self._settled(now)
            if self.linger != math.inf:
                done += [
                    t for t, s in traces.items() if not s.rooted and now - s.seen >= self.linger
                ]
        if self._linked:
            done = self._whole_groups(done)
        if self.pending > self.max_pending:  # memory first: the oldest half goes
            chosen = dict.fromkeys(done)
            for trace, _ in sorted(self._traces.items(), key=lambda kv: kv[1].first):
                if len(chosen) >= max(len(self._traces) // 2, 1):
                    break
                chosen[trace] = None
            done = list(chosen)
        return done

    def _settled(self, now: float) -> list[str]:
        """The rooted traces nothing came of for ``settle`` ticks, in the order they were rooted."""
        traces = self._traces
        done: list[str] = []
        if self._ordered:
            for trace in self._rooted:  # least recently seen first
                if now - traces[trace].seen < self.settle:
                    break  # the rest are more recent still
                done.append(trace)
        else:  # a tick went back: the order by seen may not hold
            done = [t for t in self._rooted if now - traces[t].seen >= self.settle]
        if len(done) > 1:
            done.sort(key=lambda trace: traces[trace].rooted_at)
        return done

    def _whole_groups(self, done: list[str]) -> list[str]:
        """Keep of ``done`` only the groups of linked traces that are ready whole."""
        ready = set(done)
        kept: set[str] = set()
        seen: set[str] = set()
        for trace in done:
            if trace in seen:
                continue
            group = self._group(trace) if trace in self._linked else {trace}
            seen |= group
            if group <= ready:
                kept |= group
        return [t for t in done if t in kept]  # in the order given: the mapping is deterministic

    def _group(self, trace: str) -> set[str]:
        group, todo = {trace}, [trace]
        while todo:
            for other in self._linked.get(todo.pop(), ()):
                if other not in group and other in self._traces:
                    group.add(other)
                    todo.append(other)
        return group

    def take(self, traces: Iterable[str]) -> dict[Key, Span]:
        """Let go of the given traces (those held); their spans by ``(trace, span id)``."""
        spans: dict[Key, Span] = {}
        for trace in traces:
            state = self._traces.pop(trace, None)
            if state is None:
                continue
            self._rooted.pop(trace, None)
            for other in self._linked.pop(trace, ()):
                if other in self._linked:
                    self._linked[other].discard(trace)
            self.pending -= len(state.spans)
            for span_id, span in state.spans.items():
                spans[(trace, span_id)] = span
            if self.remember:
                self._taken[trace] = state.spans
                while len(self._taken) > self.remember:
                    self._taken.popitem(last=False)
        return spans

    def take_late(self, traces: Iterable[str]) -> dict[Key, Span]:
        """The spans that reopened traces among ``traces`` held before a late span came."""
        late: dict[Key, Span] = {}
        for trace in traces:
            late.update(self._late.pop(trace, {}))
        return late

    def last_position(self, trace: str) -> int:
        """The position the latest span of a held trace came from."""
        return self._traces[trace].last

    def first_held(self, default: int) -> int:
        """The first position that still has a span held, else ``default``."""
        return min((s.first for s in self._traces.values()), default=default)

    def oldest_seen(self) -> float | None:
        """The tick the least recently seen trace held last gained a span (None: none held)."""
        return min((s.seen for s in self._traces.values()), default=None)

    def held(self) -> list[str]:
        """The traces held, in the order they opened."""
        return list(self._traces)
