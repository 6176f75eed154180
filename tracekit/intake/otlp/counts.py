"""Span conservation: every span read is accounted for, once.

A span becomes an agent invocation (or a workflow's run), a step (a tool
call, a model call, a plain step, or the node an agent was delegated
through), a wrapper folded into its agent or its step (a model turn, a loop
cycle, what a step nests), or is rejected: refused by the mapping (its parent
links loop) or outside any agent run (named in the integrity report). The
counts line says ``read = agents + steps + wrappers + rejected``; it always
adds up.

Example:
    >>> counts = SpanCounts(agents=2, steps=5, wrappers=3, outside=1)
    >>> counts.line()
    '11 spans read = 2 agents + 5 steps + 3 wrappers + 1 rejected (1 outside any agent run)'
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from tracekit._util.text import plural

__all__ = ["SpanCounts"]


@dataclass(slots=True)
class SpanCounts:
    """Where the spans read went (see the module's docstring)."""

    agents: int = 0
    steps: int = 0
    wrappers: int = 0
    outside: int = 0  # under no agent run: rejected, named in the integrity report
    refused: int = 0  # refused one by one (a parent loop, a limit, the mapping): bad lines
    #: Traces with spans but no agent any dialect or evidence shows: read as plain runs.
    plain: int = 0
    #: Traces read by an inferred dialect, by what was inferred (and how sure).
    inferred: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0  # stored already (the same trace and span id): counted, not stored again

    @property
    def read(self) -> int:
        """Every span read: the sum of the others, by construction."""
        return self.agents + self.steps + self.wrappers + self.rejected + self.duplicates

    @property
    def rejected(self) -> int:
        """Spans that are neither agents, steps nor wrappers."""
        return self.outside + self.refused

    def add(self, other: SpanCounts, sign: int = 1) -> None:
        """Add (or with ``sign=-1`` take away) another count, field by field."""
        for f in fields(self):
            if f.name == "inferred":
                for said, n in other.inferred.items():
                    left = self.inferred.get(said, 0) + sign * n
                    if left:
                        self.inferred[said] = left
                    else:
                        self.inferred.pop(said, None)
                continue
            setattr(self, f.name, getattr(self, f.name) + sign * getattr(other, f.name))

    def line(self) -> str:
        """The counts line: ``N spans read = A agents + S steps + W wrappers + R rejected``."""
        text = (
            f"{plural(self.read, 'span')} read = {plural(self.agents, 'agent')}"
            f" + {plural(self.steps, 'step')} + {plural(self.wrappers, 'wrapper')}"
            f" + {self.rejected} rejected"
        )
        if self.duplicates:
            text += f" + {plural(self.duplicates, 'duplicate')}"
        why = [f"{n} {what}" for n, what in self._why() if n]
        return f"{text} ({', '.join(why)})" if why else text

    def notes(self) -> list[str]:
        """One line per trace read without a declared agent: how, and what to do.

        Example:
            >>> SpanCounts(plain=2).notes()[0][:58]
            '2 traces have spans but no recognised agent: each is read '
        """
        out = [
            f"{plural(n, 'trace')} read by an inferred dialect: {said};"
            " check it with tracekit dialect suggest FILE"
            for said, n in sorted(self.inferred.items())
        ]
        if self.plain:
            out.append(
                f"{plural(self.plain, 'trace')} {'has' if self.plain == 1 else 'have'} spans"
                " but no recognised agent: each is"
                " read as one run of plain steps; declare your agents with --dialect FILE"
                " (docs/otel-apps.md)"
            )
        return out

    def _why(self) -> list[tuple[int, str]]:
        return [
            (self.outside, "outside any agent run"),
            (self.refused, "refused one by one"),
        ]
