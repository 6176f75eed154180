"""A dialect from its TOML text, each mistake pointed at its file and line.

Example:
    >>> parse_dialect('[dialect]\\nname = "x"\\n[tools]\\nnames = ["tool:*"]\\n', "x.toml").tools
    Match(names=('tool:*',), attributes=(), where=(), name_from=(), unless=())
    >>> parse_dialect("[agent]\\n", "x.toml")
    Traceback (most recent call last):
    ...
    tracekit.errors.DialectError: x.toml:1: agent: unknown section (known: agents, dialect, edges, errors, models, recognise, routers, tools, turns, workflows, wrappers)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Final

from tracekit.errors import DialectError
from tracekit.intake.otlp.dialect.match import Match
from tracekit.intake.otlp.dialect.model import Dialect, Edges, Errors

__all__ = ["parse_dialect"]

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
