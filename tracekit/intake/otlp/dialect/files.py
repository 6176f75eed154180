"""Where a user's dialect is declared: ``--dialect FILE``, ``tracekit.toml``, ``[tool.tracekit]``.

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as here:
    ...     _ = (Path(here) / "tracekit.toml").write_text('[agents]\\nnames = ["a:*"]\\n')
    ...     [d.agents.names for d in find_dialects(cwd=Path(here))]
    [('a:*',)]
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tracekit.errors import DialectError
from tracekit.intake.otlp.dialect.model import Dialect
from tracekit.intake.otlp.dialect.parse import parse_dialect

__all__ = ["OWN_FILE", "find_dialects", "load_dialect"]

#: The file of a working directory that declares its app's dialect.
OWN_FILE: Final = "tracekit.toml"
_PYPROJECT: Final = "pyproject.toml"


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
