"""An unknown dialect read by evidence: agents found in any attribute namespace.

When no declaration recognises a trace and no agent span is found in it,
the spans' attributes are read for what any instrumentation writes in some
namespace of its own: a span-kind attribute saying ``agent`` or ``tool``
(``x.span.kind``, ``x.spanType``, ``x.observation.type``), an attribute
naming an agent (``x.agent``, ``x.agent_name``, ``x.agent.name``), one
naming where a handoff goes (``x.handoff.target``, ``x.destination``), an
error recorded only as an attribute (``x.error.type``). What is found is a
:class:`~tracekit.intake.otlp.dialect.Dialect` like a declared one, with
how sure the reader is: ``high`` (a span kind says agent), ``medium`` (an
attribute names agents), ``low`` (only a handoff or an error).

Example:
    >>> from tracekit.intake.otlp.decode_json import Span
    >>> spans = [Span("t", "a", "", "agent:billing", 1, 2, {"app.agent": "billing"},
    ...     False, "", None)]
    >>> found = infer(spans)
    >>> found.sure, found.dialect.agents.attributes, found.dialect.agents.names
    ('medium', ('app.agent',), ('agent:*',))
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from tracekit.intake.otlp.dialect import Dialect, Edges, Errors, Match

if TYPE_CHECKING:  # the decoders keep the keys read here (through .dialects)
    from tracekit.intake.otlp.decoded import Span

__all__ = ["Inferred", "infer", "is_evidence_key"]

#: Attribute keys that say what kind a span is, in any namespace.
_KIND_KEY: Final = re.compile(
    r"(?:^|[._])(?:span[._]?kind|span[._]?type|observation[._]type|kind)$", re.IGNORECASE
)
_AGENT_KEY: Final = re.compile(r"(?:^|[._])agent(?:[._]?name)?$", re.IGNORECASE)
_TARGET_KEY: Final = re.compile(
    r"(?:handoff|transfer|goto)[._]?(?:target|destination|to|node)|destination$|next[._]agent$",
    re.IGNORECASE,
)
_TOOL_KEY: Final = re.compile(r"(?:^|[._])tool(?:[._]?name)?$", re.IGNORECASE)
#: Span names that say what a span is before a separator (``agent:billing``, ``tool/lookup``).
_NAMED: Final = re.compile(r"^(agent|tool|function)([:/])(.+)$", re.IGNORECASE)
_ERROR_KEY: Final = re.compile(
    r"(?:^|[._])(?:error[._]?(?:type|code|kind)|exception[._]?type)$", re.IGNORECASE
)
#: Span-kind values, by what they make a span.
_VALUES: Final = {
    "agents": frozenset({"agent"}),
    "workflows": frozenset({"workflow", "crew", "team", "swarm"}),
    "tools": frozenset({"tool", "function", "function_call"}),
    "models": frozenset({"llm", "chat", "chat_model", "generation", "completion", "embedding"}),
}
#: Keys of the conventions tracekit already reads: no evidence of an unknown dialect.
#: The OpenTelemetry conventions of other domains (a message's destination is no handoff).
_KNOWN: Final = (
    "gen_ai.",
    "tracekit.",
    "error.type",
    "exception.",
    "otel.",
    "span.kind",
    "messaging.",
    "http.",
    "rpc.",
    "db.",
    "net.",
    "network.",
    "server.",
    "client.",
    "url.",
    "code.",
    "thread.",
    "process.",
    "service.",
    "telemetry.",
)


@dataclass(frozen=True, slots=True)
class Inferred:
    """A dialect read from evidence, how sure the reader is, and the evidence in words."""

    dialect: Dialect
    sure: str
    said: tuple[str, ...]

    def line(self) -> str:
        """The evidence in one line, for the integrity report.

        Example:
            >>> Inferred(Dialect("inferred"), "low", ("x",)).line()
            'x (sure: low)'
        """
        return f"{'; '.join(self.said)} (sure: {self.sure})"


def is_evidence_key(key: str) -> bool:
    """Whether an attribute key may be agent evidence in some namespace (kept when decoded).

    Example:
        >>> is_evidence_key("app.agent"), is_evidence_key("x.spanType"), is_evidence_key("http.url")
        (True, True, False)
    """
    return _unknown(key) and any(
        p.search(key) for p in (_KIND_KEY, _AGENT_KEY, _TOOL_KEY, _TARGET_KEY, _ERROR_KEY)
    )


def _text(value: Any) -> str:
    return str(value).strip('"').lower() if isinstance(value, str) else ""


def _unknown(key: str) -> bool:
    return not key.startswith(_KNOWN)


def infer(spans: Iterable[Span]) -> Inferred | None:
    """The dialect the spans' attributes show, or None when they show no agent, edge or error."""
    kinds: dict[str, Counter[str]] = {}
    agent_keys: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    named: list[tuple[str, str]] = []  # (span name, agent name) for templated names
    tool_keys: Counter[str] = Counter()
    globs: dict[str, Counter[str]] = {"agent": Counter(), "tool": Counter(), "function": Counter()}
    for span in spans:
        head = _NAMED.match(span.name)
        if head is not None:
            globs[head.group(1).lower()][f"{head.group(1)}{head.group(2)}*"] += 1
        for key, value in span.attrs.items():
            if not _unknown(key):
                continue
            if _KIND_KEY.search(key):
                kinds.setdefault(key, Counter())[_text(value)] += 1
            elif _AGENT_KEY.search(key) and isinstance(value, str) and value:
                agent_keys[key] += 1
                named.append((span.name, value))
            elif _TOOL_KEY.search(key) and isinstance(value, str) and value:
                tool_keys[key] += 1
            elif _TARGET_KEY.search(key) and isinstance(value, str) and value:
                targets[key] += 1
            elif _ERROR_KEY.search(key) and value:
                codes[key] += 1
    sections = _kind_sections(kinds)
    named_globs = tuple(g for g, _ in globs["agent"].most_common(1))
    tool_globs = tuple(g for c in (globs["tool"], globs["function"]) for g, _ in c.most_common(1))
    if "tools" not in sections and (tool_globs or tool_keys):
        keys = tuple(k for k, _ in tool_keys.most_common(1))
        sections["tools"] = Match(names=tool_globs, attributes=keys, name_from=keys)
    agents = sections.pop("agents", None)
    said: list[str] = []
    if agents is not None:
        said.append(f"agents by {_pairs(agents)}")
        sure = "high"
    elif agent_keys:
        keys = tuple(k for k, _ in agent_keys.most_common(2))
        names = tuple(dict.fromkeys((*_templates(named), *named_globs)))
        agents = Match(names=names, attributes=keys, name_from=keys)
        said.append(f"agents named by {', '.join(keys)}")
        sure = "medium"
    elif named_globs:
        agents = Match(names=named_globs)
        said.append(f"agents by their span names ({', '.join(named_globs)})")
        sure = "low"
    else:
        sure = "low"
    if agents is not None and agent_keys:
        keys = tuple(k for k, _ in agent_keys.most_common(2))
        agents = Match(agents.names, agents.attributes, agents.where, keys)
    edges = Edges(target_attributes=tuple(k for k, _ in targets.most_common()))
    errors = Errors(code_from=tuple(k for k, _ in codes.most_common()))
    said += [f"handoffs by {k}" for k in edges.target_attributes]
    said += [f"errors by {k}" for k in errors.code_from]
    said += [f"{section} by {_said(m)}" for section, m in sections.items()]
    if agents is None and not edges.target_attributes and not errors.code_from:
        return None
    dialect = Dialect(
        name="inferred",
        agents=agents or Match(),
        workflows=sections.get("workflows", Match()),
        tools=sections.get("tools", Match()),
        models=sections.get("models", Match()),
        edges=edges,
        errors=errors,
    )
    return Inferred(dialect, sure, tuple(said))


def _kind_sections(kinds: dict[str, Counter[str]]) -> dict[str, Match]:
    """Sections from the span-kind attribute whose values say ``agent`` (or else ``tool``)."""
    best = None
    for key, values in kinds.items():
        score = sum(n for v, n in values.items() if v in _VALUES["agents"]) * 10 + sum(
            n for v, n in values.items() if any(v in vs for vs in _VALUES.values())
        )
        if score and (best is None or score > best[0]):
            best = (score, key)
    if best is None:
        return {}
    key = best[1]
    out: dict[str, Match] = {}
    for section, words in _VALUES.items():
        seen = tuple(v for v in kinds[key] if v in words)
        if seen:
            out[section] = Match(where=tuple((key, v) for v in seen))
    return out


def _pairs(match: Match) -> str:
    return ", ".join(f"{k}={v}" for k, v in match.where)


def _said(match: Match) -> str:
    return ", ".join([*match.names, *match.attributes, *(f"{k}={v}" for k, v in match.where)])


def _templates(named: list[tuple[str, str]]) -> tuple[str, ...]:
    """Span-name globs templated from the agent name (``agent:billing`` -> ``agent:*``)."""
    found: Counter[str] = Counter()
    for name, agent in named:
        if agent in name and name != agent:
            found[name.replace(agent, "*", 1)] += 1
    return tuple(glob for glob, n in found.most_common(2) if n > 1 or len(found) == 1)
