"""A dialect: how one instrumentation or app writes its spans, declared as data (TOML).

A dialect says how to recognise its traces, which spans are agents,
workflows, routers, wrappers, tools and model calls, how an agent is named,
where the edge evidence is, which exceptions are control flow and where the
error code is. Every section is optional but ``[dialect] name``; a section
matches a span by its name (globs), by attributes it carries, or by
attribute values (``where``). The built-in declarations live in
:mod:`tracekit.intake.otlp.shapes`; a user's is given with ``--dialect FILE``
(or ``[tool.tracekit] dialect`` in ``pyproject.toml``, or ``tracekit.toml``).

Example:
    >>> text = '''
    ... [dialect]
    ... name = "my app"
    ... [agents]
    ... names = ["agent:*"]
    ... name_from = ["app.agent"]
    ... [errors]
    ... loop_refusal = ["LoopRefused"]
    ... '''
    >>> dialect = parse_dialect(text, "tracekit.toml")
    >>> dialect.name, dialect.agents.names, dialect.errors.loop_refusal
    ('my app', ('agent:*',), ('LoopRefused',))
    >>> parse_dialect("[agents]\\nnames = 3\\n", "d.toml")
    Traceback (most recent call last):
    ...
    tracekit.errors.DialectError: d.toml:2: agents.names: expected a list of strings, got 3
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tracekit.errors import DialectError

__all__ = [
    "Dialect",
    "Edges",
    "Errors",
    "Match",
    "attribute_of",
    "find_dialects",
    "key_of",
    "load_dialect",
    "parse_dialect",
]

#: The file of a working directory that declares its app's dialect.
OWN_FILE: Final = "tracekit.toml"
_PYPROJECT: Final = "pyproject.toml"


#: Between an attribute's key and a path into its JSON value (``output#result.agent``).
PATH_MARK: Final = "#"


def attribute_of(attrs: dict[str, Any], ref: str) -> Any:
    """An attribute's value, or, for ``key#a.b``, what lies at ``a.b`` in its JSON value.

    An instrumentation may write what no attribute says inside a JSON
    attribute (a span's output naming whose turn it is); a dialect reads it
    by path. A value that is not JSON, or lacks the path, gives None.

    Example:
        >>> attribute_of({"out": '{"state": {"agent": "billing"}}'}, "out#state.agent")
        'billing'
        >>> attribute_of({"out": "plain text"}, "out#state.agent") is None
        True
    """
    key, mark, path = ref.partition(PATH_MARK)
    value = attrs.get(key)
    if not mark or value is None:
        return value
    parts = path.split(".")
    if isinstance(value, str):
        if f'"{parts[-1]}"' not in value:
            return None  # most values: one substring test, no parse
        try:
            value = json.loads(value)
        except ValueError:
            return None
    for part in parts:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def key_of(ref: str) -> str:
    """The attribute a reference reads (``out`` of ``out#state.agent``).

    Example:
        >>> key_of("out#state.agent"), key_of("gen_ai.agent.name")
        ('out', 'gen_ai.agent.name')
    """
    return ref.partition(PATH_MARK)[0]


@dataclass(frozen=True, slots=True)
class Match:
    """Which spans a section of a dialect claims, and how one is named.

    Attributes:
        names: span-name globs (``agent:*``); a ``*`` may carry the name.
        attributes: attribute keys; a span with any of them matches.
        where: attribute values (``{"app.span.kind": "agent"}``, or a list of
            values), any one matching; a value with ``*`` is a glob.
        name_from: attributes that name the agent, tool or target, first found wins.
        unless: attribute keys; a span with any of them is not claimed (a team's
            span marked a workflow, that a later section claims as an agent).

    An attribute may be read inside its JSON value: ``key#path.to.field``
    (:func:`attribute_of`), in ``attributes``, ``where`` and ``name_from``.
    """

    names: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    where: tuple[tuple[str, str], ...] = ()
    name_from: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    _globs: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)
    _values: tuple[tuple[str, re.Pattern[str] | str], ...] = field(
        default=(), repr=False, compare=False
    )

    def __post_init__(self) -> None:
        globs = tuple(re.compile(_capturing(glob)) for glob in self.names)
        object.__setattr__(self, "_globs", globs)
        values = tuple(
            (key, re.compile(fnmatch.translate(value)) if "*" in value else value)
            for key, value in self.where
        )
        object.__setattr__(self, "_values", values)

    def __bool__(self) -> bool:
        return bool(self.names or self.attributes or self.where)

    def matches(self, name: str, attrs: dict[str, Any]) -> bool:
        """Whether a span of this name and these attributes is claimed.

        Example:
            >>> Match(names=("tool:*",)).matches("tool:lookup", {})
            True
        """
        if self.unless and any(_present(attrs, key) for key in self.unless):
            return False
        if any(_present(attrs, key) for key in self.attributes):
            return True
        if any(_equal(attribute_of(attrs, key), value) for key, value in self._values):
            return True
        return any(glob.fullmatch(name) for glob in self._globs)

    def name_of(self, name: str, attrs: dict[str, Any]) -> str | None:
        """The name the span gives: ``name_from``, else a glob's ``*``, else None.

        Example:
            >>> Match(names=("agent:*",)).name_of("agent:billing", {})
            'billing'
        """
        for key in self.name_from:
            found = attribute_of(attrs, key)
            if found and isinstance(found, (str, int, float)):
                return str(found)
        for glob in self._globs:
            hit = glob.fullmatch(name)
            if hit is not None and hit.groups() and hit.group(1).strip():
                return hit.group(1).strip()
        return None


def _text(value: Any) -> str:
    """An attribute value as compared: lower case, JSON quotes dropped (``"AGENT"``)."""
    if isinstance(value, bool):  # a JSON ``true`` read by path
        return "true" if value else "false"
    return "" if value is None else str(value).strip('"').lower()


def _equal(found: Any, value: re.Pattern[str] | str) -> bool:
    if found is None:
        return False
    if isinstance(value, str):
        return _text(found) == value
    return value.match(_text(found)) is not None


def _present(attrs: dict[str, Any], ref: str) -> bool:
    if PATH_MARK not in ref:
        return ref in attrs
    found = attribute_of(attrs, ref)
    return found is not None and found != ""


def _capturing(glob: str) -> str:
    """A glob as a regular expression whose first ``*`` is a group (the name it carries)."""
    head, star, tail = glob.partition("*")
    if not star:
        return fnmatch.translate(glob).removesuffix(r"\Z").removeprefix("(?s:").removesuffix(")")
    rest = fnmatch.translate(tail).removeprefix("(?s:").removesuffix(r")\Z")
    return f"(?s:{re.escape(head)}(.*?){rest})"


@dataclass(frozen=True, slots=True)
class Edges:
    """Where a dialect writes who called whom, besides the span tree.

    Attributes:
        handoff_tools: tool-name globs that hand control on (``transfer_to_*``).
        target_keys: tool arguments that name the agent handed to.
        target_attributes: span attributes that name it (an association property).
        goto: spans that only say where control goes next (``gen_ai.operation.name = goto``).
        step_from: span attributes holding a graph's step order (the ``graph.step`` rule).
        metadata_from: attribute prefixes (ending in ``.``) under which a graph
            framework's run metadata is written one key an attribute (values
            JSON): read as that metadata (its node, step and namespace).
    """

    handoff_tools: tuple[str, ...] = ()
    target_keys: tuple[str, ...] = ()
    target_attributes: tuple[str, ...] = ()
    goto: Match = Match()
    step_from: tuple[str, ...] = ()
    metadata_from: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Errors:
    """What a dialect's failures mean.

    Attributes:
        control_flow: exception types used to jump or hand off: no failure.
        loop_refusal: exception types that refuse a loop (``AGENT_RECURSION``).
        limits: exception types that stop a run at a limit (recursion, turns).
        cancellation: signals that end a branch cancelled on purpose: no
            failure when the span above them did not fail.
        code_from: attributes holding the error code, first found wins.
        failed_where: attribute values that say a span failed though its
            status does not (``{"out#tool_output.is_error" = "true"}``: an
            error the framework caught and gave back as the tool's output).
        turn_error_ends_run: an unhandled error in an agent's turn ends the
            team's run (None: the dialect does not say).
        step_budget: how an agent's step limit shows when it stops without
            raising: (the agent span's attribute holding the limit, its step
            spans' name prefix, the tool that gives a final answer).
    """

    control_flow: tuple[str, ...] = ()
    loop_refusal: tuple[str, ...] = ()
    limits: tuple[str, ...] = ()
    cancellation: tuple[str, ...] = ()
    code_from: tuple[str, ...] = ()
    failed_where: tuple[tuple[str, str], ...] = ()
    turn_error_ends_run: bool | None = None
    step_budget: tuple[str, str, str] | None = None


@dataclass(frozen=True, slots=True)
class Dialect:
    """One declaration (see the module's docstring); ``origin`` is where it was read.

    ``turns`` are spans that start an agent's turn where no span is the agent
    (``name_from`` names it): each run of one agent's turns is an invocation.
    """

    name: str
    origin: str = ""
    recognise: Match = Match()
    agents: Match = Match()
    workflows: Match = Match()
    routers: Match = Match()
    wrappers: Match = Match()
    tools: Match = Match()
    models: Match = Match()
    turns: Match = Match()
    edges: Edges = Edges()
    errors: Errors = Errors()


_MATCH_KEYS: Final = frozenset({"names", "attributes", "where", "name_from", "unless"})
_SECTIONS: Final = (
    "recognise", "agents", "workflows", "routers", "wrappers", "tools", "models", "turns",
)  # fmt: skip
_EDGE_KEYS: Final = frozenset(
    {"handoff_tools", "target_keys", "target_attributes", "goto", "step_from", "metadata_from"}
)
_ERROR_LISTS: Final = ("control_flow", "loop_refusal", "limits", "cancellation", "code_from")
_ERROR_KEYS: Final = frozenset(
    {*_ERROR_LISTS, "turn_error_ends_run", "step_budget", "failed_where"}
)
_TOP: Final = frozenset({"dialect", *_SECTIONS, "edges", "errors"})


def find_dialects(given: Sequence[str] = (), cwd: Path | None = None) -> tuple[Dialect, ...]:
    """The user's dialects: the files given, else the working directory's own.

    Without ``--dialect FILE``, a ``tracekit.toml`` in the working directory
    is one, else a ``pyproject.toml``'s ``[tool.tracekit]``: either
    ``dialect = "FILE"`` or the sections inline (``[tool.tracekit.agents]``).

    Raises:
        DialectError: a file is missing or is not a dialect.
    """
    if given:
        return tuple(load_dialect(path) for path in given)
    here = Path.cwd() if cwd is None else cwd
    own = here / OWN_FILE
    if own.is_file():
        return (load_dialect(own),)
    pyproject = here / _PYPROJECT
    if not pyproject.is_file():
        return ()
    text = pyproject.read_text(encoding="utf-8", errors="replace")
    if "tool.tracekit" not in text:
        return ()
    try:
        section = tomllib.loads(text).get("tool", {}).get("tracekit")
    except tomllib.TOMLDecodeError as exc:
        raise DialectError(str(pyproject), 0, f"not TOML: {exc}") from None
    if not isinstance(section, dict):
        return ()
    if isinstance(section.get("dialect"), str):
        return (load_dialect(here / section["dialect"]),)
    return (parse_dialect(text, str(pyproject), table=section),)


def load_dialect(path: str | Path) -> Dialect:
    """Read a dialect file (TOML); a ``pyproject.toml`` gives its ``[tool.tracekit.dialect]``.

    Raises:
        DialectError: the file is missing, not TOML, or not a dialect (file and line).
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DialectError(where, 0, f"cannot read it: {exc}") from None
    return parse_dialect(text, where)


def parse_dialect(text: str, origin: str, table: dict[str, Any] | None = None) -> Dialect:
    """A dialect from its TOML text; ``table``, if given, is the already-parsed table in it.

    Raises:
        DialectError: not TOML, an unknown section or key, a value of the wrong type.
    """
    if table is None:
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            found = re.search(r"line (\d+)", str(exc))
            line = int(found.group(1)) if found else 0
            if not found and "end of document" in str(exc):
                line = max(1, len(text.splitlines()))
            raise DialectError(origin, line, f"not TOML: {exc}") from None
    reader = _Reader(text, origin)
    reader.known(table, _TOP, "")
    head = reader.table(table, "dialect")
    reader.known(head, frozenset({"name"}), "dialect")
    name = head.get("name", Path(origin).stem or "dialect")
    if not isinstance(name, str) or not name:
        raise reader.error("dialect.name", f"expected a name, got {name!r}")
    sections = {s: reader.match(reader.table(table, s), s) for s in _SECTIONS}
    return Dialect(
        name=name,
        origin=origin,
        edges=reader.edges(reader.table(table, "edges")),
        errors=reader.errors(reader.table(table, "errors")),
        **sections,
    )


class _Reader:
    """Checks a parsed dialect table, pointing each mistake at its line."""

    def __init__(self, text: str, origin: str) -> None:
        self.lines = text.splitlines()
        self.origin = origin

    def line_of(self, dotted: str) -> int:
        """The line of ``section.key`` (or of the section), 0 when not found."""
        section, _, key = dotted.rpartition(".")
        if not section:
            section, key = key, ""
        current = ""
        header_line = 0
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if stripped.startswith("[") and not stripped.startswith("[["):
                current = stripped.strip("[]").strip()
                current = current.removeprefix("tool.tracekit.")
                if current == section:
                    header_line = number
                continue
            if key and current == section and re.match(rf"{re.escape(key)}\s*=", stripped):
                return number
        if not header_line and "." in section:  # a key of an inline table: its table's line
            return self.line_of(section)
        return header_line

    def error(self, dotted: str, message: str) -> DialectError:
        return DialectError(self.origin, self.line_of(dotted), f"{dotted}: {message}")

    def known(self, table: dict[str, Any], keys: frozenset[str], where: str) -> None:
        for key in table:
            if key not in keys:
                dotted = f"{where}.{key}" if where else key
                allowed = ", ".join(sorted(keys))
                raise self.error(
                    dotted, f"unknown {'key' if where else 'section'} (known: {allowed})"
                )

    def table(self, table: dict[str, Any], key: str) -> dict[str, Any]:
        found = table.get(key, {})
        if not isinstance(found, dict):
            raise self.error(key, f"expected a table [{key}], got {found!r}")
        return found

    def strings(self, table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        found = table.get(key, [])
        if isinstance(found, str):
            found = [found]
        if not isinstance(found, list) or not all(isinstance(v, str) and v for v in found):
            raise self.error(f"{where}.{key}", f"expected a list of strings, got {found!r}")
        return tuple(found)

    def pairs(self, table: dict[str, Any], key: str, where: str) -> tuple[tuple[str, str], ...]:
        pairs = self.table(table, key) if key in table else {}
        values: list[tuple[str, str]] = []
        for name in pairs:
            for value in self.strings(pairs, name, f"{where}.{key}"):
                values.append((name, value.lower()))
        return tuple(values)

    def match(self, table: dict[str, Any], where: str) -> Match:
        self.known(table, _MATCH_KEYS, where)
        return Match(
            names=self.strings(table, "names", where),
            attributes=self.strings(table, "attributes", where),
            where=self.pairs(table, "where", where),
            name_from=self.strings(table, "name_from", where),
            unless=self.strings(table, "unless", where),
        )

    def edges(self, table: dict[str, Any]) -> Edges:
        self.known(table, _EDGE_KEYS, "edges")
        return Edges(
            handoff_tools=self.strings(table, "handoff_tools", "edges"),
            target_keys=self.strings(table, "target_keys", "edges"),
            target_attributes=self.strings(table, "target_attributes", "edges"),
            goto=self.match(self.table(table, "goto"), "edges.goto"),
            step_from=self.strings(table, "step_from", "edges"),
            metadata_from=self.strings(table, "metadata_from", "edges"),
        )

    def errors(self, table: dict[str, Any]) -> Errors:
        self.known(table, _ERROR_KEYS, "errors")
        flag = table.get("turn_error_ends_run")
        if flag is not None and not isinstance(flag, bool):
            raise self.error("errors.turn_error_ends_run", f"expected true or false, got {flag!r}")
        lists = {key: self.strings(table, key, "errors") for key in _ERROR_LISTS}
        budget = self.strings(table, "step_budget", "errors") or None
        if budget is not None and len(budget) != 3:
            raise self.error(
                "errors.step_budget", "expected [attribute, step name prefix, final tool]"
            )
        failed = self.pairs(table, "failed_where", "errors")
        return Errors(turn_error_ends_run=flag, step_budget=budget, failed_where=failed, **lists)
