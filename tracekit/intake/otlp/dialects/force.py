"""The dialects in force: the built-in declarations, and a user's put in force for one read.

Example:
    >>> from tracekit.intake.otlp.dialect import parse_dialect
    >>> mine = parse_dialect("[dialect]\\nname = 'mine'\\n", "tracekit.toml")
    >>> with using([mine]):
    ...     [d.name for d in user_dialects()], active()[0].name
    (['mine'], 'mine')
    >>> user_dialects()
    ()
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Final

from tracekit.intake.otlp.dialect import Dialect, load_dialect

__all__ = ["active", "builtin", "user_dialects", "using"]

_SHAPES: Final = Path(__file__).parent.parent / "shapes"
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
