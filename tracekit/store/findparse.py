"""The ``tracekit find`` query language: text to a :class:`Query` (the grammar is in docs/find.md).

A query is a chain of steps joined by edges; each step matches a node of a
delegation tree (the root run, or an invocation) by agent and predicates::

    billing >> refunds[status=error, duration>2s]
    *[kind=handoff] ~> "a > b"
    circle(billing)

The parser is hand-written, one pass over the characters, so that every error
names the column it stopped at (:class:`FindSyntaxError`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from tracekit._util.text import duration_ms, escape
from tracekit.errors import TracekitError

__all__ = [
    "EDGES",
    "FIELDS",
    "FindSyntaxError",
    "Pred",
    "Query",
    "Step",
    "parse_query",
    "quote_name",
]

#: The edges between two steps: direct child, anywhere below, handoff, handoffs only.
EDGES: Final = (">", ">>", "~>", "~>>")

# field -> (operators, allowed values or None for free text, numeric)
_TEXT_OPS: Final = ("=", "!=")
_NUM_OPS: Final = ("=", "!=", ">", ">=", "<", "<=")
_STATUSES: Final = ("ok", "error", "refused", "cancelled", "pending", "running")
#: Predicate fields, with the values each takes (None: any text; "number"/"duration").
FIELDS: Final[dict[str, tuple[str, ...] | str | None]] = {
    "status": _STATUSES,
    "code": None,
    "duration": "duration",
    "kind": ("delegate", "handoff", "subagent"),
    "service": None,
    "node": None,
    "depth": "number",
    "role": ("origin", "wrapped"),
}
_BARE: Final = re.compile(r"[\w.\-/:@+#]+")
_FIELD: Final = re.compile(r"[A-Za-z_]+")
_KEYWORD: Final = "circle"


class FindSyntaxError(TracekitError):
    """A query that does not parse; ``column`` (1-based) is where the parser stopped.

    ``str()`` is one line (the reason, the column and the query); ``hint`` is a
    caret under that column, aligned for the CLI's ``Error: `` prefix.

    Example:
        >>> try:
        ...     parse_query("billing >> [status=error]")
        ... except FindSyntaxError as exc:
        ...     print(exc.pointer())
        billing >> [status=error]
                   ^
    """

    def __init__(self, query: str, column: int, reason: str) -> None:
        self.query, self.column, self.reason = query, column, reason
        self._lead = f"{reason} at column {column}: "
        super().__init__(self._lead + escape(query), hint=self._caret(len("Error: " + self._lead)))

    def pointer(self) -> str:
        """The query and a caret under the column, on two lines."""
        return escape(self.query) + "\n" + self._caret(0)

    def _caret(self, indent: int) -> str:
        return " " * (indent + _cells(escape(self.query[: self.column - 1]))) + "^"


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes: wide East Asian characters two, combining marks none."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


@dataclass(frozen=True, slots=True)
class Pred:
    """One predicate on a node: ``field op value`` (a duration in milliseconds)."""

    field: str
    op: str
    value: str | float


@dataclass(frozen=True, slots=True)
class Step:
    """One step: an agent (None for ``*``) or a recursion circle, and its predicates."""

    agent: str | None
    preds: tuple[Pred, ...] = ()
    circle: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: ``steps[i]`` and ``steps[i + 1]`` are joined by ``edges[i]``."""

    steps: tuple[Step, ...]
    edges: tuple[str, ...]

    def __str__(self) -> str:
        parts = [_show_step(self.steps[0])]
        for edge, step in zip(self.edges, self.steps[1:], strict=True):
            parts += [edge, _show_step(step)]
        return " ".join(parts)


def quote_name(name: str) -> str:
    """A name as the query language writes it: bare if it can be, else double-quoted.

    Example:
        >>> quote_name("billing"), quote_name("a > b"), quote_name("circle")
        ('billing', '"a > b"', '"circle"')
    """
    if _BARE.fullmatch(name) and name != _KEYWORD:
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _show_step(step: Step) -> str:
    if step.circle:
        text = f"circle({quote_name(step.agent)})" if step.agent is not None else "circle"
    else:
        text = "*" if step.agent is None else quote_name(step.agent)
    if step.preds:
        shown = (f"{p.field}{p.op}{_show_value(p)}" for p in step.preds)
        text += "[" + ", ".join(shown) + "]"
    return text


def _show_value(pred: Pred) -> str:
    if isinstance(pred.value, float):
        return f"{pred.value:g}ms" if pred.field == "duration" else f"{pred.value:g}"
    return quote_name(pred.value)


def parse_query(text: str) -> Query:
    """Parse a query.

    Raises:
        FindSyntaxError: the query does not parse; it names the column.

    Example:
        >>> q = parse_query('billing >> refunds[status=error, duration>2s]')
        >>> q.edges, q.steps[1].preds[1]
        (('>>',), Pred(field='duration', op='>', value=2000.0))
        >>> str(parse_query("*[kind = handoff]~>'a > b'"))
        '*[kind=handoff] ~> "a > b"'
    """
    return _Parser(text).query()


class _Parser:
    """Recursive descent over the characters; ``pos`` is 0-based, columns 1-based."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str, pos: int | None = None) -> FindSyntaxError:
        return FindSyntaxError(self.text, (self.pos if pos is None else pos) + 1, reason)

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def take(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def found(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            return "the end of the query"
        return f"'{escape(self.text[self.pos])}'"

    def query(self) -> Query:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("empty query: expected an agent, '*' or circle")
        steps, edges = [self.step()], list[str]()
        while True:
            self.skip()
            if self.pos >= len(self.text):
                return Query(tuple(steps), tuple(edges))
            edge = self.edge()
            if edge is None:
                raise self.fail(f"expected >, >>, ~> or ~>> between steps, found {self.found()}")
            edges.append(edge)
            steps.append(self.step())

    def edge(self) -> str | None:
        for token in ("~>>", "~>", ">>", ">"):
            if self.take(token):
                return token
        return None

    def step(self) -> Step:
        if self.take("*"):
            agent, circle = None, False
        else:
            name, quoted = self.name("an agent, '*' or circle")
            circle = name == _KEYWORD and not quoted
            agent = self.circle_agent() if circle else name
        preds: list[Pred] = []
        while self.take("["):
            preds.extend(self.preds())
        return Step(agent, tuple(preds), circle)

    def circle_agent(self) -> str | None:
        if not self.take("("):
            return None
        agent = None if self.take("*") else self.name("an agent or '*' in circle(...)")[0]
        if not self.take(")"):
            raise self.fail(f"expected ')' to close circle(, found {self.found()}")
        return agent

    def name(self, what: str) -> tuple[str, bool]:
        """A bare or quoted name; whether it was quoted."""
        self.skip()
        if self.pos < len(self.text) and self.text[self.pos] in "\"'":
            return self.quoted(), True
        match = _BARE.match(self.text, self.pos)
        if match is None:
            raise self.fail(f"expected {what}, found {self.found()}")
        self.pos = match.end()
        return match.group(), False

    def quoted(self) -> str:
        start, mark = self.pos, self.text[self.pos]
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            self.pos += 1
            if char == mark:
                if not out:
                    raise self.fail("an empty name", start)
                return "".join(out)
            out.append(char)
        raise self.fail(f"unterminated quote (opened with {mark})", start)

    def preds(self) -> list[Pred]:
        found = [self.pred()]
        while self.take(","):
            found.append(self.pred())
        if not self.take("]"):
            raise self.fail(f"expected ',' or ']' after a predicate, found {self.found()}")
        return found

    def pred(self) -> Pred:
        self.skip()
        start = self.pos
        match = _FIELD.match(self.text, self.pos)
        field = match.group() if match else ""
        if field not in FIELDS:
            what = (
                f"unknown field {escape(field)!r}"
                if field
                else f"expected a field, found {self.found()}"
            )
            raise self.fail(f"{what} (fields: {', '.join(FIELDS)})", start)
        self.pos = start + len(field)
        op_pos = self.pos
        op = next((o for o in ("!=", ">=", "<=", "=", ">", "<") if self.take(o)), None)
        allowed = FIELDS[field]
        ops = _NUM_OPS if allowed in ("duration", "number") else _TEXT_OPS
        if op is None or op not in ops:
            raise self.fail(
                f"{field} takes {', '.join(ops)}", op_pos if op is None else self.pos - len(op)
            )
        return Pred(field, op, self.value(field, allowed))

    def value(self, field: str, allowed: tuple[str, ...] | str | None) -> str | float:
        self.skip()
        start = self.pos
        if self.pos < len(self.text) and self.text[self.pos] in "\"'":
            text = self.quoted()
        else:
            match = _BARE.match(self.text, self.pos)
            if match is None:
                raise self.fail(f"expected a value for {field}, found {self.found()}")
            self.pos, text = match.end(), match.group()
        if allowed == "duration":
            ms = duration_ms(text)
            if ms is None:
                raise self.fail(f"{escape(text)!r} is not a duration (500ms, 2s, 1.5m)", start)
            return ms
        if allowed == "number":
            if not text.isdigit():
                raise self.fail(f"{escape(text)!r} is not a whole number", start)
            return float(text)
        if isinstance(allowed, tuple) and text not in allowed:
            raise self.fail(f"{field} {escape(text)!r} is not one of {', '.join(allowed)}", start)
        return text
