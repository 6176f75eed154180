"""What the dialects in force say of each span, written on it before the span index is built.

Example:
    >>> from tracekit.intake.otlp.decoded import Span
    >>> from tracekit.intake.otlp.dialect import parse_dialect
    >>> from tracekit.intake.otlp.dialects.force import using
    >>> mine = parse_dialect('[agents]\\nnames = ["agent:*"]', "tracekit.toml")
    >>> spans = {("t", "a"): Span("t", "a", "", "agent:billing", 1, 2, {}, False, "", None)}
    >>> with using([mine]):
    ...     apply(spans)
    {'t': 'tracekit'}
    >>> spans["t", "a"].attrs
    {'tracekit.dialect.kind': 'agent', 'gen_ai.agent.name': 'billing'}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracekit.intake.otlp.dialect import Dialect
from tracekit.intake.otlp.dialects.claims import claim
from tracekit.intake.otlp.dialects.faults import mark_failed, write_errors
from tracekit.intake.otlp.dialects.keys import Key
from tracekit.intake.otlp.dialects.tables import Tables, joined_tables, tables
from tracekit.intake.otlp.dialects.targets import prefer_tool_markers, write_target

if TYPE_CHECKING:  # the decoders ask which keys to keep: they import this package
    from tracekit.intake.otlp.decoded import Span

__all__ = ["apply", "apply_dialect"]


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
                claim(spans, span, dialect)
        if span.error or span.exception is not None or not found.code_keys.isdisjoint(attrs):
            write_errors(spans, span, found)
        elif not found.failed_keys.isdisjoint(attrs):
            mark_failed(span, found)
        if (
            not marks.isdisjoint(attrs)
            or found.goto_names[span.name]
            or any(attrs.get(k) == v for k, v in gotos)
        ):
            write_target(spans, span, found)
    prefer_tool_markers(spans)
    return {trace: d.name for trace, d in recognised.items()}


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


def apply_dialect(spans: dict[Key, Span], dialect: Dialect, traces: set[str]) -> None:
    """Write what one dialect (an inferred one) says on the spans of ``traces``."""
    found = joined_tables((dialect,), ())
    for key, span in spans.items():
        if key[0] in traces:
            claim(spans, span, dialect)
            write_errors(spans, span, found)
            write_target(spans, span, found)
