"""Names and durations as terminal text: the two helpers every printer shares.

They live apart from :mod:`tracekit.tree.text` (which re-exports them) so
that a printer such as ``tracekit fleet`` does not import the readers and
the tree to escape a name.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["duration_ms", "escape", "format_ms", "plural"]


def plural(count: int, word: str, words: str | None = None) -> str:
    """``count`` and the word, singular for exactly one: ``1 circle``, ``2 circles``.

    Example:
        >>> plural(1, "bad line"), plural(0, "duplicate"), plural(3, "child", "children")
        ('1 bad line', '0 duplicates', '3 children')
    """
    return f"{count} {word if count == 1 else (words or word + 's')}"


def escape(text: str) -> str:
    r"""Make a name from a trace safe to print: what is not printable becomes an escape.

    Every printer of names uses it: the tree, the fleet tables, the store's
    tables and CSV. "Not printable" is Python's :meth:`str.isprintable`:
    control characters (C0, DEL, C1: ESC, BEL, CR...), the bidirectional
    controls (U+200E/F, U+202A-E, U+2066-9, which reorder what follows on
    screen), line and paragraph separators (U+2028/9) and other format or
    unassigned characters.

    Example:
        >>> escape("sql\x1b[31m")
        'sql\\x1b[31m'
        >>> escape("invoice\u202egpj.exe")
        'invoice\\u202egpj.exe'
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape_char(c) for c in text)


def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def format_ms(ms: float) -> str:
    """Format a duration: ``11ms``, ``0.4ms``, ``12.5s`` from ten seconds on.

    Example:
        >>> format_ms(11), format_ms(0.4), format_ms(12500)
        ('11ms', '0.4ms', '12.5s')
    """
    if ms >= 10_000:
        return f"{ms / 1000:.1f}s"
    if ms >= 1 or ms == 0:
        return f"{ms:.0f}ms"
    return f"{ms:.1f}ms"


_UNIT_MS: Final = {"ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3, "d": 86400e3, "w": 604800e3}
_DURATION: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*")


def duration_ms(text: str, *, bare: bool = True) -> float | None:
    """Read a duration such as ``90s``, ``30m``, ``24h`` or ``7d`` as milliseconds.

    The one reader of durations: ``tracekit simulate --window`` and every
    ``--since``. A bare number is milliseconds when ``bare``; ``None`` means
    the text is not a duration (a caller may then try it as a time).

    Example:
        >>> duration_ms("2h"), duration_ms("1500"), duration_ms("1500", bare=False)
        (7200000.0, 1500.0, None)
    """
    match = _DURATION.fullmatch(text)
    if match is None or (match.group(2) is None and not bare):
        return None
    return float(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]
