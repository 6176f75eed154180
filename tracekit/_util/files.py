"""What a file is, by its first bytes: a store given where a trace is expected, or the reverse."""

from __future__ import annotations

import os

__all__ = ["is_store_file"]

# Every DuckDB database file carries this at byte 8 of its first block.
_MAGIC = b"DUCK"


def is_store_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a DuckDB file (a tracekit store), by its header, not its name.

    Example:
        >>> is_store_file("sample_traces/child_failure.jsonl")
        False
    """
    try:
        with open(path, "rb") as file:
            return file.read(12)[8:12] == _MAGIC
    except OSError:
        return False
