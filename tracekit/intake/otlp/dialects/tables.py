"""What every dialect in force says, joined into the tables the rules read.

Example:
    >>> found = tables()
    >>> "ParentCommand" in found.control_flow, is_control_flow("errors.ParentCommand")
    (True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from tracekit.intake.otlp.dialect import Dialect, Match, key_of
from tracekit.intake.otlp.dialects.force import builtin, user_dialects
from tracekit.intake.otlp.evidence import is_evidence_key
from tracekit.intake.otlp.handoff import target_in
from tracekit.intake.otlp.names import NameMemo

if TYPE_CHECKING:  # the decoders ask which keys to keep: they import this package
    from tracekit.intake.otlp.decoded import Span

__all__ = ["Tables", "is_control_flow", "joined_tables", "kept_keys", "short_type", "tables"]


def short_type(kind: str) -> str:
    """An exception type's short name, as the dialects list it (``ParentCommand``)."""
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
def joined_tables(dialects: tuple[Dialect, ...], user: tuple[Dialect, ...]) -> Tables:
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
        control_flow=frozenset(map(short_type, joined("control_flow"))),
        loop_refusal=frozenset(map(short_type, joined("loop_refusal"))),
        limits=frozenset(map(short_type, joined("limits"))),
        cancellation=frozenset(map(short_type, joined("cancellation"))),
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
    user = user_dialects()
    if _LAST and _LAST[0][0] is user:  # asked per span: the same dialects as last time
        return _LAST[0][1]
    found = joined_tables((*user, *builtin()), user)
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
    return kind is not None and short_type(kind) in tables().control_flow
