"""The examples in the docstrings of the tree's modules run and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest
from _tree_helpers import ROOT

MODULES = [
    "tracekit._cli_quick",
    "tracekit._gcpause",
    "tracekit._text",
    "tracekit.describe",
    "tracekit.readers",
    "tracekit.readers.jsonl",
    "tracekit.readers.lines",
    "tracekit.steps",
    "tracekit.tree",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples name files under sample_traces/
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
