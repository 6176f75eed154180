"""The dialects in force, and what they say of each span, written on it for the rules.

The built-in declarations (``shapes/*.toml``) are always known; a user's
(``--dialect FILE``) is put in force for one read with :func:`using`. Before
the span index is built, :func:`apply` reads every span against them once
and writes what they say as evidence the rules read:

- its kind, ``tracekit.dialect.kind`` (``agent``, ``workflow``, ``wrapper``,
  ``tool``, ``model``), and the name it gives (``gen_ai.agent.name``,
  ``gen_ai.tool.name``, ``gen_ai.workflow.name``), for the spans of a trace
  the dialect recognises;
- a handoff marker of any dialect (a goto span, an attribute naming the agent
  handed to) as ``gen_ai.transfer.target.name``, on the tool call that made
  it when there is one;
- an exception type a dialect lists as control flow, as
  ``tracekit.control_flow`` (no failure); a loop refusal, as tracekit's
  ``AGENT_RECURSION``; an error code found where the dialect keeps it, as
  ``error.type``.

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> from tracekit.intake.otlp.dialect import parse_dialect
    >>> mine = parse_dialect('[agents]\\nnames = ["agent:*"]', "tracekit.toml")
    >>> spans = {("t", "a"): Span("t", "a", "", "agent:billing", 1, 2, {}, False, "", None)}
    >>> with using([mine]):
    ...     _ = apply(spans)
    >>> spans["t", "a"].attrs
    {'tracekit.dialect.kind': 'agent', 'gen_ai.agent.name': 'billing'}
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tracekit.intake.otlp.dialect import Dialect, Match, attribute_of, key_of, load_dialect
from tracekit.intake.otlp.evidence import is_evidence_key
from tracekit.intake.otlp.handoff import is_handoff_word, is_transfer_name, target_in
from tracekit.intake.otlp.inputs import CURRENT_AGENT
from tracekit.intake.otlp.names import NameMemo

if TYPE_CHECKING:  # the decoders ask which keys to keep: they import this module
    from tracekit.intake.otlp.decoded import Span

__all__ = [
    "CONTROL_FLOW_KEY",
    "KIND",
    "Tables",
    "active",
    "apply",
    "apply_dialect",
    "builtin",
    "is_control_flow",
    "kept_keys",
    "tables",
    "user_dialects",
    "using",
]

Key = tuple[str, str]
#: Where a dialect's verdict on a span is written; the kind tests read it first.
KIND: Final = "tracekit.dialect.kind"
#: The control-flow exception a span raised (it did not fail).
CONTROL_FLOW_KEY: Final = "tracekit.control_flow"
_TARGET: Final = "gen_ai.transfer.target.name"
#: The attribute the graph rules read a run's metadata from (JSON).
_META: Final = "metadata"
_MODE: Final = "gen_ai.transfer.mode"
_SHAPES: Final = Path(__file__).parent / "shapes"
_ACTIVE: ContextVar[tuple[Dialect, ...]] = ContextVar("tracekit_dialects", default=())


@cache
def builtin() -> tuple[Dialect, ...]:
    """The declarations shipped in ``shapes/`` (``*.toml``), by file name."""
    return tuple(load_dialect(path) for path in sorted(_SHAPES.glob("*.toml")))


def user_dialects() -> tuple[Dialect, ...]:
    """The user's dialects in force (none unless inside :func:`using`)."""
    return _ACTIVE.get()


def active() -> tuple[Dialect, ...]:
    """The user's dialects in force (first), then the built-in ones."""
    return (*_ACTIVE.get(), *builtin())


@contextmanager
def using(dialects: Sequence[Dialect]) -> Iterator[None]:
    """Put a user's dialects in force for what runs inside (a read, an ingest).

    None given, the dialects already in force stay (a caller's).
    """
    if not dialects:
        yield
        return
    token = _ACTIVE.set(tuple(dialects))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _short(kind: str) -> str:
    return kind.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class Tables:
    """What every dialect in force says, joined: the rules read these."""

    dialects: tuple[Dialect, ...]
    user: tuple[Dialect, ...]
    control_flow: frozenset[str]
    loop_refusal: frozenset[str]
    limits: frozenset[str]
    cancellation: frozenset[str]
    target_attributes: tuple[str, ...]
    target_keys: tuple[str, ...]
    code_from: tuple[str, ...]
    keys: frozenset[str]
    names: NameMemo[bool]
    #: What may make a span a handoff marker or carry an error code (tested per span).
    mark_keys: frozenset[str]
    goto_names: NameMemo[bool]
    goto_pairs: tuple[tuple[str, str], ...]
    code_keys: frozenset[str]
    #: Attribute values that say a span failed (``errors.failed_where``), and their keys.
    failed: Match
    failed_keys: frozenset[str]
    #: The attributes holding a graph's step order, besides the graph's own metadata.
    step_from: tuple[str, ...]
    #: The keys and span names by which a built-in dialect recognises a trace.
    recognise_keys: frozenset[str]
    recognise_names: NameMemo[bool]
    #: Prefixes under which a graph's run metadata is written one key an attribute.
    metadata_from: tuple[str, ...]
    #: Per set of base keys, whether the decoders keep an attribute (:func:`kept_keys`).
    kept: dict[frozenset[str], NameMemo[bool]]

    def goto(self, span: Span) -> str | None:
        """The agent a goto span sends control to, if the span is one."""
        for dialect in self.dialects:
            goto = dialect.edges.goto
            if goto and goto.matches(span.name, span.attrs):
                # The target may be written inside the span's output (``{"to_agent": "x"}``).
                name = goto.name_of(span.name, span.attrs)
                return (target_in([name]) or name) if name else None
        return None


def _keys(match: Match) -> set[str]:
    refs = (*match.attributes, *(key for key, _ in match.where), *match.name_from, *match.unless)
    return set(map(key_of, refs))


@cache
def _tables(dialects: tuple[Dialect, ...], user: tuple[Dialect, ...]) -> Tables:
    keys: set[str] = set()
    globs: list[str] = []
    for d in dialects:
        for match in (d.recognise, d.agents, d.workflows, d.routers, d.wrappers, d.tools, d.turns):
            keys |= _keys(match)
            globs.extend(match.names)
        keys |= _keys(d.models) | _keys(d.edges.goto) | set(map(key_of, d.edges.target_attributes))
        keys |= set(map(key_of, d.edges.step_from))
        keys |= set(map(key_of, d.errors.code_from))
        keys |= {key_of(k) for k, _ in d.errors.failed_where}
        globs.extend((*d.models.names, *d.edges.goto.names))
    probe = Match(names=tuple(dict.fromkeys(globs)))
    known = Match(names=tuple(g for d in dialects for g in d.recognise.names))
    goto_globs = Match(names=tuple(g for d in dialects for g in d.edges.goto.names))

    def joined(attr: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for d in dialects for v in getattr(d.errors, attr)))

    return Tables(
        dialects=dialects,
        user=user,
        control_flow=frozenset(map(_short, joined("control_flow"))),
        loop_refusal=frozenset(map(_short, joined("loop_refusal"))),
        limits=frozenset(map(_short, joined("limits"))),
        cancellation=frozenset(map(_short, joined("cancellation"))),
        target_attributes=tuple(
            dict.fromkeys(k for d in dialects for k in d.edges.target_attributes)
        ),
        target_keys=tuple(dict.fromkeys(k for d in dialects for k in d.edges.target_keys)),
        code_from=joined("code_from"),
        step_from=tuple(dict.fromkeys(k for d in dialects for k in d.edges.step_from)),
        keys=frozenset(keys),
        names=NameMemo(lambda name: probe.matches(name, {})),
        mark_keys=frozenset(
            key_of(k)
            for d in dialects
            for k in (*d.edges.target_attributes, *d.edges.goto.attributes)
        ),
        goto_names=NameMemo(lambda name: goto_globs.matches(name, {})),
        goto_pairs=tuple(p for d in dialects for p in d.edges.goto.where),
        code_keys=frozenset(key_of(k) for d in dialects for k in d.errors.code_from),
        failed=Match(where=tuple(p for d in dialects for p in d.errors.failed_where)),
        failed_keys=frozenset(key_of(k) for d in dialects for k, _ in d.errors.failed_where),
        recognise_keys=frozenset(k for d in dialects for k in _keys(d.recognise)),
        recognise_names=NameMemo(lambda name: known.matches(name, {})),
        metadata_from=tuple(dict.fromkeys(k for d in dialects for k in d.edges.metadata_from)),
        kept={},
    )


_LAST: list[tuple[tuple[Dialect, ...], Tables]] = []


def tables() -> Tables:
    """The joined tables of the dialects in force (remembered per set of dialects)."""
    user = _ACTIVE.get()
    if _LAST and _LAST[0][0] is user:  # asked per span: the same dialects as last time
        return _LAST[0][1]
    found = _tables((*user, *builtin()), user)
    _LAST[:] = [(user, found)]
    return found


def kept_keys(base: frozenset[str]) -> NameMemo[bool]:
    """Whether a span attribute is kept by the decoders: ``base``, a dialect's, or evidence.

    The decoders keep only what some rule reads (a big file holds millions of
    spans until their traces are complete); a dialect's keys and the keys the
    evidence reader looks for (:func:`.evidence.is_evidence_key`) are read.

    Example:
        >>> kept = kept_keys(frozenset({"gen_ai.agent.name"}))
        >>> kept["gen_ai.agent.name"], kept["app.agent"], kept["http.route"]
        (True, True, False)
    """
    found = tables()
    memo = found.kept.get(base)
    if memo is None:
        keys = found.keys | base
        prefixes = found.metadata_from

        def kept(key: str) -> bool:
            return (
                key in keys or is_evidence_key(key) or (bool(prefixes) and key.startswith(prefixes))
            )

        memo = found.kept[base] = NameMemo(kept)
    return memo


def is_control_flow(kind: str | None) -> bool:
    """Whether an exception type is control flow in a dialect in force.

    Example:
        >>> is_control_flow("errors.ParentCommand"), is_control_flow("ValueError")
        (True, False)
    """
    return kind is not None and _short(kind) in tables().control_flow


def apply(spans: dict[Key, Span]) -> dict[str, str]:
    """Write what the dialects in force say on each span; each trace's dialect by name.

    Only a span with a key, a name or an error some dialect speaks of is
    looked at; the others (most of a fleet) cost one set test and a lookup.
    """
    found = tables()
    recognised = _recognised(spans, found)
    marks, gotos = found.mark_keys, found.goto_pairs
    for key, span in spans.items():
        attrs = span.attrs
        if recognised:
            dialect = recognised.get(key[0])
            if dialect is not None:
                _kind(spans, span, dialect)
        if span.error or span.exception is not None or not found.code_keys.isdisjoint(attrs):
            _errors(spans, span, found)
        elif not found.failed_keys.isdisjoint(attrs):
            _failed(span, found)
        if (
            not marks.isdisjoint(attrs)
            or found.goto_names[span.name]
            or any(attrs.get(k) == v for k, v in gotos)
        ):
            _target(spans, span, found)
    _prefer_tool_markers(spans)
    return {trace: d.name for trace, d in recognised.items()}


def _prefer_tool_markers(spans: dict[Key, Span]) -> None:
    """A bare goto beside the tool call that made the same handoff is no marker of its own.

    A graph may record the jump twice: under the transfer tool, and again
    under the node that ran it. The tool call names the handoff (the node).
    """
    tools: set[tuple[str, str]] = set()
    bare: list[Span] = []
    for span in spans.values():
        target = span.attrs.get(_TARGET)
        if target is None:
            continue
        if _is_tool_call(span):
            tools.add((span.trace, str(target)))
        elif span.attrs.get(KIND) is None:
            bare.append(span)
    for span in bare:
        if (span.trace, str(span.attrs[_TARGET])) in tools:
            attrs = {k: v for k, v in span.attrs.items() if k not in (_TARGET, _MODE)}
            span.attrs = {**attrs, KIND: "wrapper"}


def _recognised(spans: dict[Key, Span], found: Tables) -> dict[str, Dialect]:
    """Each trace's dialect: the first in force that recognises one of its spans.

    A dialect with no ``[recognise]`` section recognises every trace (a
    user's, for their own app); the built-in ones only their own.
    """
    out: dict[str, Dialect] = {}
    generic = next((d for d in found.user if not d.recognise), None)
    keys, names = found.recognise_keys, found.recognise_names
    for key, span in spans.items():
        if key[0] in out or (keys.isdisjoint(span.attrs) and not names[span.name]):
            continue  # most spans: no dialect's mark (one set test, one lookup)
        for dialect in found.dialects:
            if dialect.recognise and dialect.recognise.matches(span.name, span.attrs):
                out[key[0]] = dialect
                break
    if generic is not None:
        for key in spans:
            out.setdefault(key[0], generic)
    return out


#: Sections in the order they are asked: a router or wrapper that looks like an agent is
#: not one, and a wrapper that calls a tool or a model (a workflow's task naming it) is the call.
_KINDS: Final = (
    ("routers", "wrapper", None),
    ("tools", "tool", "gen_ai.tool.name"),
    ("models", "model", None),
    ("wrappers", "wrapper", None),
    ("workflows", "workflow", "gen_ai.workflow.name"),
    ("agents", "agent", "gen_ai.agent.name"),
)


def apply_dialect(spans: dict[Key, Span], dialect: Dialect, traces: set[str]) -> None:
    """Write what one dialect (an inferred one) says on the spans of ``traces``."""
    found = _tables((dialect,), ())
    for key, span in spans.items():
        if key[0] in traces:
            _kind(spans, span, dialect)
            _errors(spans, span, found)
            _target(spans, span, found)


def _kind(spans: dict[Key, Span], span: Span, dialect: Dialect) -> None:
    if dialect.edges.metadata_from and _META not in span.attrs:
        _gather_metadata(span, dialect.edges.metadata_from)
    if dialect.turns and CURRENT_AGENT not in span.attrs:
        agent = _turn_of(span, dialect.turns)
        if agent is not None:
            span.attrs = {**span.attrs, CURRENT_AGENT: agent}
    for section, kind, name_key in _KINDS:
        match: Match = getattr(dialect, section)
        if not match or not match.matches(span.name, span.attrs):
            continue
        name = match.name_of(span.name, span.attrs) or span.name
        if kind == "agent" and _inside_same(spans, span, match, name):
            continue  # an attribute carried down into the agent's own spans
        attrs = {**span.attrs, KIND: kind}
        if name_key is not None:
            attrs[name_key] = name
        span.attrs = attrs
        return


def _gather_metadata(span: Span, prefixes: tuple[str, ...]) -> None:
    """A run's metadata written one key an attribute, gathered as the one ``metadata`` table.

    The graph rules read a framework's run metadata (its node, step and
    namespace) as one JSON attribute; a dialect that flattens it under a
    prefix (values JSON-encoded) is read the same.
    """
    meta: dict[str, Any] = {}
    for key, value in span.attrs.items():
        if key.startswith(prefixes):
            name = key[next(len(p) for p in prefixes if key.startswith(p)) :]
            meta[name] = _decoded(value)
    if meta:
        span.attrs = {**span.attrs, _META: json.dumps(meta)}


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _turn_of(span: Span, turns: Match) -> str | None:
    """The agent whose turn the span starts, when the dialect's ``[turns]`` claims it."""
    if not turns.matches(span.name, span.attrs):
        return None
    return turns.name_of(span.name, span.attrs)


def _failed(span: Span, found: Tables) -> None:
    """A span whose attributes say it failed (a caught error given back as output)."""
    if found.failed.matches(span.name, span.attrs):
        span.error = True


def _inside_same(spans: dict[Key, Span], span: Span, match: Match, name: str) -> bool:
    """Whether the span's parent is the same agent (its name carried by attribute to its steps)."""
    if Match(names=match.names).matches(span.name, {}):
        return False  # named as an agent itself: a call, even of the same agent
    parent = spans.get((span.trace, span.parent)) if span.parent else None
    if parent is None or not match.matches(parent.name, parent.attrs):
        return False
    return (match.name_of(parent.name, parent.attrs) or parent.name) == name


def _errors(spans: dict[Key, Span], span: Span, found: Tables) -> None:
    attrs = span.attrs
    if "error.type" not in attrs:
        for key in found.code_from:
            code = attrs.get(key)
            if code:  # an error written only as an attribute
                span.attrs = attrs = {**attrs, "error.type": str(code)}
                span.error = True
                break
    kind = attrs.get("error.type") or span.exception
    if not kind or not isinstance(kind, str):
        return
    short = _short(kind)
    if short in found.control_flow or (short in found.cancellation and _on_purpose(spans, span)):
        span.attrs = {**attrs, CONTROL_FLOW_KEY: short}
    elif short in found.loop_refusal and "tracekit.error" not in attrs:
        message = span.message or span.exception_message or short
        error = {"code": "AGENT_RECURSION", "message": message, "type": kind}
        span.attrs = {**attrs, "tracekit.error": json.dumps(error)}


def _on_purpose(spans: dict[Key, Span], span: Span) -> bool:
    """A cancellation the span above did not raise on: the branch was cancelled on purpose."""
    above = spans.get((span.trace, span.parent)) if span.parent else None
    return above is not None and not above.error and above.exception is None


def _target(spans: dict[Key, Span], span: Span, found: Tables) -> None:
    """A handoff marker's target, on the tool call that made it when it is under one."""
    target = found.goto(span)
    goto = target is not None
    if target is None:
        for key in found.target_attributes:
            value = attribute_of(span.attrs, key)
            if value and isinstance(value, str):
                target = str(value)
                break
    if target is None or _TARGET in span.attrs:
        return
    marker = span
    parent = spans.get((span.trace, span.parent)) if goto and span.parent else None
    if parent is not None and _is_tool_call(parent):
        marker = parent
        span.attrs = {**span.attrs, KIND: "wrapper"}  # the tool call is the node
    if _TARGET not in marker.attrs:
        marker.attrs = {**marker.attrs, _TARGET: target, _MODE: _mode(marker)}


def _mode(marker: Span) -> str:
    """A delegation tool (``delegate_*``, no handoff word) returns to its caller; else control passes."""
    name = marker.attrs.get("gen_ai.tool.name") or marker.attrs.get("tool.name") or marker.name
    delegates = is_transfer_name(str(name)) and not is_handoff_word(str(name))
    return "return_to_caller" if delegates else "pass_control"


def _is_tool_call(span: Span) -> bool:
    attrs = span.attrs
    return (
        attrs.get(KIND) == "tool"
        or attrs.get("gen_ai.operation.name") == "execute_tool"
        or "gen_ai.tool.name" in attrs
        or "tool.name" in attrs
    )
