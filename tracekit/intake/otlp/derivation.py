"""The one processor from stored spans to records: whole traces, read again as received.

The store keeps every span as received (:mod:`tracekit.intake.otlp.received`);
:func:`derive_traces` takes the spans of whole traces (every span a trace has,
from every file, request and restart) and maps them with the rules of today's
tracekit (:class:`~tracekit.intake.otlp.convert.OtlpConverter`), so a trace
that gains a span, or a store whose rules changed, is derived again from the
same evidence. :func:`deriver_version` names the rules; the store stamps each
derived trace with it.

:class:`SpanDeriver` is the same mapping fed the spans a fresh ingest has in
hand, as they are decoded, so they are not decoded a second time from the
store. A trace is derived whole once it settles; a trace that gains a span
after that, shares a span link or repeats a span given before is handed back
as ``late``, for the store to derive from its stored spans.

Example:
    >>> derive_traces([]).records
    []
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from tracekit._version import __version__
from tracekit.events import Event, RunEnd
from tracekit.intake.assemble import TraceAssembler
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.counts import SpanCounts
from tracekit.intake.otlp.decode_json import Span
from tracekit.intake.otlp.decode_json_fast import Ids
from tracekit.intake.otlp.received import SPAN_NAMES
from tracekit.intake.otlp.stored import row_span

__all__ = [
    "ROW_COLUMNS",
    "RULES_VERSION",
    "SETTLE",
    "Derived",
    "SpanDeriver",
    "derive_rows",
    "derive_traces",
    "deriver_version",
]

#: Raised whenever the mapping rules change what a stored span derives to.
RULES_VERSION: Final = 2
_SHIFT = 40  # a line's key in the converter: its ingest above this bit, its line below
#: Documents a rooted trace stays open for late spans before it is derived in hand.
SETTLE: Final = 64
#: Traces derived that a late span may still reopen, with ``reopen`` (no store).
REMEMBER: Final = 1024
#: The columns of a stored span row as :func:`derive_rows` reads them.
ROW_COLUMNS: Final = ("ingest_id", *SPAN_NAMES)
_LINE: Final = ROW_COLUMNS.index("line")
_TRACE: Final = ROW_COLUMNS.index("trace_id")
_PARENT: Final = ROW_COLUMNS.index("parent_span_id")


def deriver_version() -> str:
    """The name of the rules that derive records from spans (stamped on derived traces).

    Example:
        >>> deriver_version().startswith("tracekit ")
        True
    """
    return f"tracekit {__version__} rules {RULES_VERSION}"


@dataclass
class Derived:
    """What whole traces derive to: records and refused spans, each where its span was read."""

    #: ``(ingest, line, record)``, in the order the mapping gives them.
    records: list[tuple[int, int, Event]] = field(default_factory=list)
    #: ``(ingest, line, text, reason, trace)`` for each span the rules refuse.
    refused: list[tuple[int, int, str, str, str]] = field(default_factory=list)
    counts: SpanCounts = field(default_factory=SpanCounts)
    #: The traces derived (a :class:`SpanDeriver`'s batch; empty from :func:`derive_traces`).
    traces: list[str] = field(default_factory=list)
    #: Its number among a :class:`SpanDeriver`'s batches.
    number: int = 0
    #: The spans of each trace derived (a :class:`SpanDeriver`'s batch).
    sizes: dict[str, int] = field(default_factory=dict)


def derive_traces(rows: list[dict[str, Any]]) -> Derived:
    """Map the stored spans of whole traces (rows with ``ingest_id``, ``line``, ``pos``).

    The rows come sorted by where they were read (ingest, line, place in the
    line); the spans of one line are fed together, as they came.
    """
    return derive_rows([tuple(row.get(name) for name in ROW_COLUMNS) for row in rows])


def derive_rows(rows: Sequence[Sequence[Any]]) -> Derived:
    """:func:`derive_traces` of rows as tuples of :data:`ROW_COLUMNS` (the store's query gives them).

    Each row is read straight into its span (:func:`~tracekit.intake.otlp.stored.row_span`),
    no OTLP JSON document made and decoded again.

    Example:
        >>> derive_rows([]).counts.read
        0
    """
    converter = OtlpConverter()
    ids = Ids()
    key: int | None = None
    spans: list[Span] = []
    for row in rows:
        here = (int(row[0]) << _SHIFT) + int(row[_LINE])
        if here != key and spans:
            converter.feed_spans(spans, line=key or 0)
            spans = []
        key = here
        spans.append(row_span(row[1:], ids))
    if spans:
        converter.feed_spans(spans, line=key or 0)
    derived = Derived(counts=converter.counts)
    _gather(derived, converter, converter.finish_lines(), _rootless(rows))
    return derived


def _gather(
    derived: Derived,
    converter: OtlpConverter,
    pairs: list[tuple[int, Event]],
    rootless: set[str],
) -> None:
    """The records and refusals of a mapping, each at its ``(ingest, line)``."""
    mask = (1 << _SHIFT) - 1
    for number, event in pairs:
        if rootless and isinstance(event, RunEnd) and (event.traceId or "") in rootless:
            continue  # its root has not come: the run is not over, whatever its top span says
        derived.records.append((number >> _SHIFT, number & mask, event))
    for number, text, reason in converter.take_rejects():
        derived.refused.append((number >> _SHIFT, number & mask, text, reason, _trace_of(text)))


class SpanDeriver:
    """Spans derived as they are read, each trace whole once it settles: ingest's and tree's driver.

    Fed the spans of each line (:meth:`add`), it gives batches of derived
    traces (:meth:`ready`, :meth:`finish`). For a store (the default) it takes
    the spans the store accepted (first copy wins) and hands back as ``late``
    what it cannot derive exactly as the stored spans would be: a trace that
    gains a span once derived (its batch is ``dropped``), joined by a span
    link, or repeating a span id; the store derives those from their spans.
    With ``reopen`` (``tracekit tree``: no store) a late span reopens its trace
    in hand instead, and the records given before are not given again.

    Example:
        >>> deriver = SpanDeriver()
        >>> deriver.finish().records, deriver.late
        ([], set())
    """

    def __init__(
        self,
        settle: float = SETTLE,
        *,
        reopen: bool = False,
        linger: float = math.inf,
        max_pending: int = 1 << 62,
        checked: bool = True,
    ) -> None:
        assembler = TraceAssembler(
            settle=settle,
            linger=linger,
            max_pending=max_pending,
            remember=REMEMBER if reopen else 0,
        )
        self._converter = OtlpConverter(assembler)
        self._reopen = reopen
        self._checked = checked and not reopen  # the spans fed met the limits at the door
        self._ingest = 0
        self._held: dict[str, set[str]] = {}  # trace -> span ids held
        self._count = 0  # span ids held, in all
        self._rooted: set[str] = set()  # held traces with a span without a parent
        self._given: dict[str, int] = {}  # trace derived -> its batch
        self._members: dict[int, list[str]] = {}
        self._batches = 0
        self._lines = 0  # lines fed: the assembler's ticks
        #: Where every span derived so far went (dropped batches included).
        self.counts = SpanCounts()
        if reopen:
            self._converter.counts = self.counts
        #: Traces to derive from their stored spans instead.
        self.late: set[str] = set()
        #: Batches given before one of their traces turned late (their rows are void).
        self.dropped: list[int] = []

    def held(self) -> list[tuple[str, int]]:
        """The traces held with their spans, the first fed first."""
        return [(trace, len(ids)) for trace, ids in self._held.items()]

    def __len__(self) -> int:
        """Traces held (fed, not derived yet)."""
        return len(self._held)

    def __contains__(self, trace: str) -> bool:
        """Whether spans of the trace are held (fed, not derived yet)."""
        return trace in self._held

    def start(self, ingest: int) -> None:
        """The spans fed next were read by this ingest."""
        self._ingest = ingest

    def add(self, spans: list[Span], line: int, now: float | None = None) -> None:
        """Take the spans of one line, in their order.

        For a store they are the spans it accepted (within the limits, unless
        not ``checked``: read back from rows, they are checked again here, as
        from the store); with ``reopen`` every decoded span, checked here.
        ``now`` is the settle's clock (a collector's seconds); by default the
        lines fed so far.
        """
        self._lines += 1
        kept = spans if self._reopen else self._kept(spans)
        if kept or self._reopen:
            key = (self._ingest << _SHIFT) + line
            tick = self._lines if now is None else now
            self._converter.feed_spans(kept, line=key, now=tick, checked=self._checked)

    def _kept(self, spans: list[Span]) -> list[Span]:
        kept: list[Span] = []
        for span in spans:
            trace = span.trace
            if trace in self.late:
                continue
            held = self._held.get(trace)
            if held is None:
                if trace in self._given:
                    self.void(trace)
                    continue
                held = self._held[trace] = set()
            if span.id in held:
                continue  # the store keeps the first copy
            if any(other and other != trace for other, _ in span.links):
                self.void(trace, *(other for other, _ in span.links))
                continue
            held.add(span.id)
            self._count += 1
            if not span.parent:
                self._rooted.add(trace)
            kept.append(span)
        return kept

    def ready(self, now: float | None = None, most: int = 1 << 62) -> Derived:
        """The traces settled so far (by ``now``, on :meth:`add`'s clock), derived (one batch).

        ``most``: spans the batch takes at most (the oldest settled traces
        first, one at least); the rest wait for the next batch.
        """
        settled = self._converter.assembler.ready(now=self._lines if now is None else now)
        return self._take(self._at_most(settled, most))

    def _at_most(self, traces: list[str], most: int) -> list[str]:
        taken: list[str] = []
        spans = 0
        for trace in traces:
            size = len(self._held.get(trace, ())) or 1
            if taken and spans + size > most:
                break
            taken.append(trace)
            spans += size
        return taken

    @property
    def pending(self) -> int:
        """Spans held, their trace not derived yet (until its records are made)."""
        return self._converter.assembler.pending if self._reopen else self._count

    def oldest(self) -> float | None:
        """The tick the least recent of the held traces last gained a span (None: none held)."""
        return self._converter.assembler.oldest_seen()

    def forget(self) -> set[str]:
        """Let go of the traces given and of those turned late; returns the late ones.

        A collector's store says itself whether a trace has spans stored
        already: a later span of a trace given is routed to the store by the
        caller, and a late trace is derived from its stored spans.

        Example:
            >>> deriver = SpanDeriver()
            >>> deriver.void("t1")
            >>> deriver.forget(), deriver.late
            ({'t1'}, set())
        """
        late, self.late = self.late, set()
        self._converter.assembler.take(late)  # held when they turned late: let go unmapped
        self._given.clear()
        self._members.clear()
        self.dropped.clear()
        return late

    def finish(self) -> Derived:
        """Every trace still held, derived (one batch)."""
        return self._take(self._converter.assembler.held())

    def _take(self, traces: list[str]) -> Derived:
        self._batches += 1
        derived = Derived(number=self._batches)
        void = [t for t in traces if t in self.late]
        if void:  # held when they turned late: let go unmapped
            self._converter.assembler.take(void)
            traces = [t for t in traces if t not in self.late]
        if self._reopen:  # mapped as it came, counted in the converter's (our) counts
            _gather(derived, self._converter, self._converter.take(traces), set())
            return derived
        # A trace whose root has not come is an incomplete run, as from the stored spans.
        rootless = {t for t in traces if t not in self._rooted}
        self._converter.counts = derived.counts
        _gather(derived, self._converter, self._converter.take(traces), rootless)
        self.counts.add(derived.counts)
        if not traces:
            return derived
        for trace in traces:
            derived.sizes[trace] = size = len(self._held.pop(trace, ()))
            self._count -= size
            self._rooted.discard(trace)
            self._given[trace] = derived.number
        derived.traces = traces
        self._members[derived.number] = traces
        return derived

    def given(self) -> list[str]:
        """The traces derived in hand and not late (their batches stand)."""
        return [t for t in self._given if t not in self.late]

    def void(self, *traces: str) -> None:
        """These traces go to the store: a batch that gave one of them is dropped whole.

        Example:
            >>> deriver = SpanDeriver()
            >>> deriver.void("t1")
            >>> deriver.late
            {'t1'}
        """
        for trace in traces:
            if trace in self.late:
                continue
            self.late.add(trace)
            self._count -= len(self._held.pop(trace, ()))
            self._rooted.discard(trace)
            number = self._given.get(trace)
            if number is not None and number in self._members:
                self.dropped.append(number)
                self.void(*self._members.pop(number))


def _rootless(rows: Sequence[Sequence[Any]]) -> set[str]:
    """The traces none of whose spans is a root (one without a parent): their root has not come."""
    traces = {row[_TRACE] for row in rows}
    rooted = {row[_TRACE] for row in rows if not row[_PARENT]}
    return traces - rooted


def _trace_of(text: str) -> str:
    try:
        span = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return ""
    found = span.get("traceId") if isinstance(span, dict) else None
    return found if isinstance(found, str) else ""
