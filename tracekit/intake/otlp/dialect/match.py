"""A section of a dialect: which spans it claims (names, attributes, values), and their names.

Example:
    >>> agents = Match(names=("agent:*",), name_from=("app.agent",))
    >>> agents.matches("agent:billing", {}), agents.name_of("agent:billing", {})
    (True, 'billing')
    >>> agents.name_of("agent:x", {"app.agent": "refunds"})
    'refunds'
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from tracekit.intake.otlp.dialect.refs import PATH_MARK, attribute_of

__all__ = ["Match"]


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
