"""The trace format, version 1: one JSON object per line.

Five record types describe a run of agents (see ``docs/trace-format.md``):

* ``enter``: an agent invocation starts. ``runId`` is the new child run,
  ``parentRunId`` the caller's run, ``node`` the caller's node that delegates.
* ``exit``: it ends, with ``ok``, ``status``, ``durationMs`` and ``error``.
* ``node``: a step of a run (``id`` may be a path such as ``delegate/sql/say``).
* ``run.start`` / ``run.end``: a root run opens and closes.

Records are msgspec structs: decoding a line validates it and builds the typed
record in one pass, several times faster than a JSON parse into a dict. Fields
keep the wire's camelCase names so that a record's JSON is the format itself.

Example:
    >>> ev = decode_event(b'{"type":"node","ts":1,"runId":"r1","id":"decide"}')
    >>> ev.id, ev.runId
    ('decide', 'r1')
    >>> encode_event(ev)
    b'{"type":"node","ts":1.0,"runId":"r1","id":"decide"}'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, TypeAlias

import msgspec

from tracekit.validate import (
    DEPTH_REASON,
    MAX_DEPTH,
    MAX_SEQ,
    MAX_TS_MS,
    MIN_SEQ,
    MIN_TS_MS,
    too_deep,
)

__all__ = [
    "CALLS",
    "EVENT_TYPES",
    "KINDS",
    "MAX_LINE_BYTES",
    "STATUSES",
    "Call",
    "EdgeInfo",
    "Enter",
    "ErrorInfo",
    "Event",
    "Exit",
    "Kind",
    "Node",
    "RunEnd",
    "RunStart",
    "Status",
    "Usage",
    "canonical_circle",
    "check_error",
    "decode_error",
    "decode_event",
    "encode_event",
    "event_from_dict",
    "parse_ts",
]

Kind: TypeAlias = Literal["delegate", "handoff", "subagent"]
Call: TypeAlias = Literal["tool", "llm"]
Status: TypeAlias = Literal["ok", "error", "refused", "cancelled", "pending"]
Failure: TypeAlias = Literal["delegation", "agent"]

# The limits of tracekit.validate, checked by msgspec as it decodes.
_Id: TypeAlias = Annotated[str, msgspec.Meta(min_length=1)]
_Ts: TypeAlias = Annotated[float, msgspec.Meta(ge=MIN_TS_MS, le=MAX_TS_MS)]
_Duration: TypeAlias = Annotated[float, msgspec.Meta(ge=-MAX_TS_MS, le=MAX_TS_MS)]
_Seq: TypeAlias = Annotated[int, msgspec.Meta(ge=MIN_SEQ, le=MAX_SEQ)]

KINDS: Final = ("delegate", "handoff", "subagent")
CALLS: Final = ("tool", "llm")
STATUSES: Final = ("ok", "error", "refused", "cancelled", "pending")
EVENT_TYPES: Final = ("enter", "exit", "node", "run.start", "run.end")

#: The longest line a reader takes, newline excluded. A v1 record is a few
#: hundred bytes; an OTLP JSON export line is one batch of spans (the OTel
#: collector's file exporter writes a few MiB at most with default batching).
#: 16 MiB fits both with room to spare, while a longer line is refused by its
#: number without ever being held whole: it is not a trace record but a
#: mistake (a binary, a dump, a runaway attribute).
MAX_LINE_BYTES: Final = 16 << 20


def canonical_circle(chain: Sequence[str]) -> str:
    """One name for a circle however it was entered: rotated to start at its least name.

    Direction is kept (``a -> c -> b -> a`` is another circle than ``a -> b -> c -> a``).

    Example:
        >>> canonical_circle(["b", "a", "b"]), canonical_circle(["a", "b", "a"])
        ('a -> b -> a', 'a -> b -> a')
        >>> canonical_circle(["c", "a", "b", "c"])
        'a -> b -> c -> a'
    """
    ring = list(chain[:-1]) if len(chain) > 1 and chain[0] == chain[-1] else list(chain)
    if not ring:
        return ""
    first = ring.index(min(ring))
    ring = ring[first:] + ring[:first]
    return " -> ".join([*ring, ring[0]])


def parse_ts(value: float | str) -> float:
    """Return a timestamp as milliseconds since the Unix epoch.

    Accepts a number (already milliseconds) or an RFC 3339 string; a string
    without an offset is taken as UTC.

    Example:
        >>> parse_ts("1970-01-01T00:00:01.5Z")
        1500.0
    """
    if isinstance(value, (int, float)):
        return float(value)
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"ts {value!r} is neither milliseconds nor an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() * 1000.0


class ErrorInfo(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=False):
    """Why an invocation or run did not end ok.

    ``chain`` is the recursion circle (``["orders", "billing", "orders"]``);
    ``cause`` is the child's own error under an ``AGENT_FAILED`` wrapper,
    nested the same way however deep (or under an exception that was raised
    from, or re-raised, the child's). ``type`` is an exception's fully
    qualified class name when ``code`` is its short name
    (``myapp.errors.RefundTimeout`` for ``RefundTimeout``).
    """

    code: str
    message: str = ""
    chain: list[str] | None = None
    cause: ErrorInfo | None = None
    type: str | None = None


class EdgeInfo(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=False):
    """How an invocation's parent was found, when a reader had to infer it.

    ``source`` names the rule that found the edge (``otel.parent``,
    ``span.link``, ``gen_ai.transfer``, ``handoff.span``, ...); a record written
    by an instrumented runtime knows its parent and leaves ``edge`` out.
    """

    source: str


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=False):
    """Model usage: tokens in and out, and the models that answered.

    On an ``exit`` it is the invocation's **own** usage (its model calls, not
    its children's: totals are summed over the tree); on an ``llm`` step it is
    that one call's.
    """

    inputTokens: Annotated[int, msgspec.Meta(ge=0)] | None = None
    outputTokens: Annotated[int, msgspec.Meta(ge=0)] | None = None
    models: list[str] | None = None


class _Record(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=True):
    """Fields every record may carry."""

    ts: _Ts
    seq: _Seq | None = None
    service: str | None = None
    traceId: str | None = None
    attrs: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # msgspec turns a ValueError here into a ValidationError naming the record.
        if self.attrs is not None and too_deep(self.attrs):
            raise ValueError(DEPTH_REASON)


def check_error(error: ErrorInfo | None) -> None:
    """Refuse a chain of causes deeper than the limit (walked, not recursed).

    Raises:
        ValueError: the chain is deeper than :data:`~tracekit.validate.MAX_DEPTH`.
    """
    depth = 0
    while error is not None:
        depth += 1
        if depth > MAX_DEPTH:
            raise ValueError(DEPTH_REASON)
        error = error.cause


class Enter(_Record, tag="enter", kw_only=True):
    """An agent invocation starts."""

    invocationId: _Id
    runId: _Id
    parentRunId: _Id | None = None
    agent: _Id
    node: _Id | None = None
    kind: Kind = "delegate"
    edge: EdgeInfo | None = None


class Exit(_Record, tag="exit", kw_only=True):
    """An agent invocation ends.

    ``ok`` and ``status`` may each be left out; the other is derived from the
    one given (``ok`` is ``status == "ok"``; a missing status is ``ok`` or
    ``error``).
    """

    invocationId: _Id
    runId: _Id
    parentRunId: _Id | None = None
    agent: _Id
    node: _Id | None = None
    ok: bool | None = None
    durationMs: _Duration | None = None
    status: Status | None = None
    error: ErrorInfo | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_error(self.error)
        if self.status is None:
            self.status = "error" if self.ok is False or self.error is not None else "ok"
        if self.ok is None:
            self.ok = self.status == "ok"


class Node(_Record, tag="node", kw_only=True):
    """A step of a run; ``id`` may be a path, the tree shows its last part.

    ``call`` says what the step called: ``tool`` (a tool call, named by the
    tool) or ``llm`` (a model turn, hidden from trees unless asked for). A
    failed step carries ``ok: false`` and its ``error``.
    """

    runId: _Id
    id: _Id
    ok: bool | None = None
    durationMs: _Duration | None = None
    call: Call | None = None
    error: ErrorInfo | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_error(self.error)
        if self.ok is None and self.error is not None:
            self.ok = False


class RunStart(_Record, tag="run.start", kw_only=True):
    """A root run starts; ``session`` groups the runs of one conversation."""

    runId: _Id
    agent: _Id
    session: _Id | None = None


class RunEnd(_Record, tag="run.end", kw_only=True):
    """A root run ends; ``failure`` says why it failed, as the runtime saw it.

    ``usage`` is the root agent's own model usage, as an ``exit``'s is an
    invocation's (its children's is on their exits).
    """

    runId: _Id
    ok: bool
    durationMs: _Duration | None = None
    failure: Failure | None = None
    error: ErrorInfo | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_error(self.error)


Event: TypeAlias = Enter | Exit | Node | RunStart | RunEnd


def _wire(cls: type[_Record]) -> type:
    """Build a decoding twin of ``cls`` whose ``ts`` also accepts a string."""
    fields = [
        (f.name, f.type if f.name != "ts" else float | str, f.default)
        if f.default is not msgspec.NODEFAULT
        else (f.name, f.type if f.name != "ts" else float | str)
        for f in msgspec.structs.fields(cls)
    ]
    return msgspec.defstruct(
        f"_Wire{cls.__name__}",
        fields,
        tag_field="type",
        tag=cls.__struct_config__.tag,
        kw_only=True,
    )


_CLASSES: Final[tuple[type[_Record], ...]] = (Enter, Exit, Node, RunStart, RunEnd)
_DECODER: Final = msgspec.json.Decoder(Event)
_WIRE_DECODER: Final = msgspec.json.Decoder(
    _wire(Enter) | _wire(Exit) | _wire(Node) | _wire(RunStart) | _wire(RunEnd)
)
_ENCODER: Final = msgspec.json.Encoder()
_ERROR_DECODER: Final = msgspec.json.Decoder(ErrorInfo | None)


def decode_event(line: bytes | str) -> Event:
    """Decode one JSON line into its typed record.

    Raises:
        msgspec.DecodeError: the line is not JSON (or is cut short).
        msgspec.ValidationError: it is JSON but not a v1 record, or breaks a
            limit of :mod:`tracekit.validate`; the message names the field,
            e.g. ``Expected `str`, got `int` - at `$.agent```.

    Example:
        >>> decode_event('{"type":"run.start","ts":"1970-01-01T00:00:00Z","runId":"r","agent":"a"}').ts
        0.0
    """
    try:
        try:
            return _DECODER.decode(line)
        except msgspec.ValidationError:
            # The fast path rejects string times; only then pay for the wire twin.
            wire = _WIRE_DECODER.decode(line)
            return _from_wire(wire)
    except RecursionError:
        # JSON nested past Python's own limit: far past the record's.
        raise msgspec.ValidationError(DEPTH_REASON) from None


def decode_error(text: str | None) -> ErrorInfo | None:
    """An error kept as JSON (a store's ``error`` column), or None when it is not one.

    Example:
        >>> decode_error('{"code": "AGENT_FAILED", "cause": {"code": "Boom", "message": "no"}}').cause
        ErrorInfo(code='Boom', message='no', chain=None, cause=None, type=None)
        >>> decode_error("Boom"), decode_error(None)
        (None, None)
    """
    if not text:
        return None
    try:
        error: ErrorInfo | None = _ERROR_DECODER.decode(text)
    except (msgspec.DecodeError, RecursionError):  # not an error object: its code is all we know
        return None
    return error


def _from_wire(wire: Any) -> Event:
    values = msgspec.structs.asdict(wire)
    try:
        values["ts"] = parse_ts(values["ts"])
    except ValueError as exc:
        raise msgspec.ValidationError(f"{exc} - at `$.ts`") from None
    cls = _BY_TAG[wire.__struct_config__.tag]
    event: Event = msgspec.convert(values, cls)  # type: ignore[assignment]
    return event


_BY_TAG: Final[dict[str, type[_Record]]] = {c.__struct_config__.tag: c for c in _CLASSES}  # type: ignore[misc]


def event_from_dict(obj: dict[str, Any]) -> Event:
    """Build a record from a decoded JSON object (same rules as a line).

    Example:
        >>> event_from_dict({"type": "run.end", "ts": 5, "runId": "r", "ok": True}).ok
        True
    """
    if isinstance(obj.get("ts"), str):
        obj = {**obj, "ts": parse_ts(obj["ts"])}
    return msgspec.convert(obj, Event)


def encode_event(event: Event) -> bytes:
    """Encode a record as one JSON line, without the newline."""
    return _ENCODER.encode(event)
