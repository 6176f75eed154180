"""Help pages that name values as a reader would: ``--run RUN_ID``, not ``--run <str>``.

typer fills the help's type column with Python type names (``<str>``,
``<bool>``, ``<int range>``) and writes a required argument as ``{file}``.
These command classes name each value by its metavar instead: a flag takes
no value and shows none; an argument shows its metavar (``FILE``) in the
usage line and the type column alike; an option without a metavar shows
its choices (``[text|json]``) or a plain word (``TEXT``, ``INTEGER``, ``NUMBER``).

Example:
    >>> import typer
    >>> app = typer.Typer(cls=PlainGroup)
"""

from __future__ import annotations

import enum
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup

__all__ = ["PlainCommand", "PlainGroup"]

# What a value is called when its option names no metavar, by Python type.
_WORDS = {"int": "INTEGER", "float": "NUMBER", "str": "TEXT"}


class PlainArgument(TyperArgument):
    """An argument shown by its metavar in the usage line and the type column."""

    def display_type_rich(self, ctx: Any) -> str | None:
        """No type column: the argument's name already says what it is."""
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        """``FILE``, ``[FILE]`` or ``PATHS...``, as click writes them."""
        name = self.metavar or (self.name or "").upper()
        if self.nargs != 1:
            name += "..."
        return [name if self.required else f"[{name}]"]


def _metavar(param: Any) -> str:
    """The word for an option's value: its choices, or a plain name of its type."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""  # a flag takes no value: show none
    choices = getattr(param.type_descriptor, "choices", None)
    if choices:
        return (
            "[" + "|".join(c.value if isinstance(c, enum.Enum) else str(c) for c in choices) + "]"
        )
    return _WORDS.get(param.bare_type(), "VALUE")


def plain_params(params: list[Any]) -> None:
    """Give every parameter of a command the reader's names (in place)."""
    for param in params:
        if isinstance(param, TyperArgument):
            # Same state, other methods: typer builds its own argument objects.
            param.__class__ = PlainArgument
            if param.metavar is None and param.name:
                param.metavar = param.name.upper()
        elif param.metavar is None:
            param.metavar = _metavar(param)


class _PlainHelp:
    """What a command and the group share: plain names, ``--help`` without a value."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain_params(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        """``--help``, a flag: no value shown."""
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class PlainCommand(_PlainHelp, TyperCommand):
    """A typer command whose help names values as :func:`plain_params` does."""


class PlainGroup(_PlainHelp, TyperGroup):
    """The ``tracekit`` group: its own options (``--help``, ``--version``) named plainly."""
