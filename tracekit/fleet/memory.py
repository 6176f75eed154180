"""The fleet report within the configured memory: a query that needs more stops with one line.

DuckDB spills sorts, joins and groupings to disk, but an exact percentile
holds every value of its group in memory: over tens of millions of calls
that alone can pass ``TRACEKIT_DB_MEMORY``. Rather than a traceback, the
report then stops with an error that says the two ways out: more memory, or
approximate percentiles (a bounded sketch per agent).

Example:
    >>> with within_memory("exact"):
    ...     pass
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import duckdb

from tracekit.errors import LakeError, StoreError

__all__ = ["within_memory"]


@contextlib.contextmanager
def within_memory(percentiles: str, *, engine: str | None = None) -> Iterator[None]:
    """Turn DuckDB's out-of-memory error inside the block into one ``Error:`` line.

    Args:
        percentiles: the report's percentiles (``exact`` or ``approx``), to say what helps.
        engine: ``duckdb`` or ``spark`` over a lake (a :class:`LakeError`), None for a
            store (a :class:`StoreError`).

    Raises:
        LakeError: over a lake, a query ran out of memory or a file could not be read.
        StoreError: over a store, a query ran out of memory.
    """
    try:
        yield
    except duckdb.OutOfMemoryException:
        limit = os.environ.get("TRACEKIT_DB_MEMORY", "1GB")
        hint = f"Set TRACEKIT_DB_MEMORY above {limit} (e.g. TRACEKIT_DB_MEMORY=4GB)"
        if percentiles == "exact":
            hint += ", or use --percentiles approx (bounded memory, not exact)"
        error = LakeError if engine else StoreError
        raise error(
            f"the fleet report needs more memory than TRACEKIT_DB_MEMORY={limit} allows",
            hint=hint + ".",
        ) from None
    except duckdb.Error as exc:
        if not engine:
            raise
        # A lake's file that is damaged or not Parquet: say which, no traceback.
        raise LakeError(f"cannot read the lake ({str(exc).splitlines()[0]})") from None
