"""A stand-in for the model: fixed routing by keywords, so no key is needed.

The examples' llm steps call :func:`choose`; a real runtime would ask a model
with the same catalogue and question. Shared by the example scripts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def choose(question: str, routes: Mapping[str, Sequence[str]], default: str) -> str:
    """Pick the desk whose keywords appear in the question.

    Example:
        >>> choose("I was charged twice", {"refunds": ["charged", "refund"]}, "invoices")
        'refunds'
    """
    words = question.lower()
    for desk, keywords in routes.items():
        if any(k in words for k in keywords):
            return desk
    return default


def think(ms: float = 2.0) -> None:
    """Stand in for the time a model or a tool takes."""
    time.sleep(ms / 1000)


def parser(description: str, default_out: str, question: str) -> argparse.ArgumentParser:
    """The options every example takes: the question and where the trace goes."""
    args = argparse.ArgumentParser(description=description)
    args.add_argument("question", nargs="?", default=question)
    args.add_argument(
        "--out", type=Path, default=Path(default_out), help="the JSONL trace to append to"
    )
    return args


def wrote(path: Path) -> None:
    """Say on stderr where the trace went and how to look at it (the answer is on stdout)."""
    print(f"trace appended to {path}: tracekit tree {path}", file=sys.stderr)
