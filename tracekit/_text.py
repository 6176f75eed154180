"""Names and durations as terminal text: the two helpers every printer shares.

They live apart from :mod:`tracekit.describe` (which re-exports them) so
that a printer such as ``tracekit fleet`` does not import the readers and
the tree to escape a name.
"""

from __future__ import annotations

__all__ = ["escape", "format_ms"]


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
