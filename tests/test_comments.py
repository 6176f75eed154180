"""Comments and docstrings say what the code does, never what it did before.

A comment that tells history ("as before", "no longer", "last round") is
true only for a reader who knew the old code; the behaviour it stands for
belongs in the words instead. Only ``#`` comments and docstrings of the
package are read: strings the code prints or matches are not prose.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tracekit"

#: Phrases that tell history rather than behaviour (a short list: few false positives).
HISTORY = re.compile(
    r"\b(as before|exactly as before|than before|no longer|used to be|previously|formerly"
    r"|last round|this round|next round|any ?more|is now|are now|now also)\b",
    re.IGNORECASE,
)


def _prose(source: str) -> Iterator[tuple[int, str]]:
    """Each ``#`` comment and docstring of a module, with its first line."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and node.body:
                yield node.body[0].lineno, doc


def _history(source: str) -> list[tuple[int, str]]:
    return [(line, m.group(0)) for line, text in _prose(source) for m in HISTORY.finditer(text)]


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_comments_state_behaviour_not_history(path: Path) -> None:
    found = _history(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(PACKAGE)}: say what it does, not what changed: {found}"


def test_the_check_reads_comments_and_docstrings_only() -> None:
    source = (
        '"""Reads the spans as before."""\n'
        "x = 'no longer a comment'  # it now also reads here\n"
        "def f():\n"
        '    """Previously a method."""\n'
    )
    assert _history(source) == [(2, "now also"), (1, "as before"), (4, "Previously")]
