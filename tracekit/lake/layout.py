"""Where a lake keeps each table: the folders, the partition keys and their escaping.

A lake is a folder: one sub-folder a table, Hive-partitioned by ``day`` and
``service``, one Parquet file a partition for each writer (a store, a
``tracekit serve``) named by the writer's id, the lake's mark and one manifest
a writer beside them (``docs/lake.md``)::

    lake/runs/day=2026-12-01/service=billing/collector-a.parquet
    lake/runs/day=2026-12-01/service=billing/collector-b.parquet
    lake/_tracekit_lake.json
    lake/_writers/collector-a.json

A partition value is written as Spark writes it (Hive's escaping: ``%XX`` for
``/``, ``=``, ``%``, control characters and a few more; every other character,
non-ASCII included, as it is), so Spark, DuckDB, pyarrow and polars read back
the same name. A NULL value is ``__HIVE_DEFAULT_PARTITION__``, as both engines
write it.

Example:
    >>> partition_path("runs", "2026-12-01", "a/b=c")
    'runs/day=2026-12-01/service=a%2Fb%3Dc'
    >>> unescape(escape("ünï %/\\x1b")) == "ünï %/\\x1b"
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from tracekit.errors import LakeError

__all__ = [
    "DEFAULT_PARTITION",
    "LATER_COLUMNS",
    "LATER_TABLES",
    "MANIFEST",
    "PARTITION_KEYS",
    "STAGING",
    "TABLES",
    "WRITERS",
    "TableLayout",
    "escape",
    "partition_path",
    "unescape",
    "writer_name",
]

MANIFEST: Final = "_tracekit_lake.json"
#: One manifest a writer (``<writer>.json``), its lock and nothing else: writers
#: never write the same file, so many export into one lake at once.
WRITERS: Final = "_writers"
#: Where an export writes before it moves each partition into place. Spark and
#: Hive skip folders whose names start with ``_``; the readers glob table folders only.
STAGING: Final = "_staging"
DEFAULT_PARTITION: Final = "__HIVE_DEFAULT_PARTITION__"
PARTITION_KEYS: Final = ("day", "service")


def _day(moment: str) -> str:
    return f"strftime({moment}, '%Y-%m-%d')"


def _day_of_ms(column: str) -> str:
    return _day(f"make_timestamp(CAST({column} * 1000 AS BIGINT))")


@dataclass(frozen=True, slots=True)
class TableLayout:
    """How one store table is partitioned.

    Attributes:
        name: the table.
        day: DuckDB SQL (on the table's alias ``t``) for the partition's day, ``YYYY-MM-DD``.
        service: DuckDB SQL for the partition's service.
        joins: joins that ``service`` needs (steps take their run's service).
    """

    name: str
    day: str
    service: str
    joins: str = ""


# A step has no service of its own: it takes its run's (a child run's invocation,
# else the root run), looked up once per run id; min() keeps it the same each export.
_STEP_SERVICE: Final = """
LEFT JOIN (
    SELECT run_id, min(service) AS service FROM (
        SELECT run_id, service FROM invocations WHERE service IS NOT NULL
        UNION ALL SELECT run_id, service FROM runs WHERE service IS NOT NULL
    ) GROUP BY run_id
) s ON s.run_id = t.run_id
"""

#: Columns a later store schema added that the readers' queries use: a lake
#: whose writers all predate them reads them as NULL rather than failing.
LATER_COLUMNS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "runs": (("own_input_tokens", "BIGINT"), ("own_output_tokens", "BIGINT")),
    # the classification reads a failed step's code and message (v5)
    "steps": (("error_code", "VARCHAR"), ("error_message", "VARCHAR")),
}

#: Tables a later store schema added that the readers' queries use: a lake whose
#: writers all predate them reads them as empty rather than failing (``loops``: v10).
LATER_TABLES: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "loops": (
        ("run_id", "VARCHAR"),
        ("circle", "VARCHAR"),
        ("revisits", "INTEGER"),
        ("stopped", "VARCHAR"),
        ("limit_code", "VARCHAR"),
        ("origin_agent", "VARCHAR"),
        ("invocations", "INTEGER"),
        ("model_calls", "INTEGER"),
        ("input_tokens", "BIGINT"),
        ("output_tokens", "BIGINT"),
        ("duration_ms", "DOUBLE"),
    ),
}

# A loop has no day or service of its own: it takes its run's.
_RUN_OF_LOOP: Final = "LEFT JOIN runs r ON r.run_id = t.run_id"

#: Every exported table, in the order they are written.
TABLES: Final[dict[str, TableLayout]] = {
    table.name: table
    for table in (
        TableLayout("events", _day_of_ms("t.ts_ms"), "t.service"),
        TableLayout("invocations", _day("coalesce(t.start_at, t.end_at)"), "t.service"),
        TableLayout("runs", _day("coalesce(t.start_at, t.end_at)"), "t.service"),
        TableLayout("steps", _day_of_ms("t.ts_ms"), "s.service", _STEP_SERVICE),
        TableLayout("fleet_calls", _day("t.start_at"), "t.service"),
        TableLayout("loops", _day("coalesce(r.start_at, r.end_at)"), "r.service", _RUN_OF_LOOP),
    )
}

# Hive's (and Spark's) escaped set: control characters, and those a path or
# a partition spec would misread. Everything else stays as it is.
_ESCAPED: Final = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))
_HEX: Final = re.compile(r"%([0-9A-Fa-f]{2})")


def escape(value: str | None) -> str:
    """A partition value as a folder name (``None`` is Hive's default partition).

    Example:
        >>> escape("50%/day"), escape(None)
        ('50%25%2Fday', '__HIVE_DEFAULT_PARTITION__')
    """
    if value is None:
        return DEFAULT_PARTITION
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value) or DEFAULT_PARTITION


def unescape(name: str) -> str | None:
    """The value a partition folder name stands for.

    Example:
        >>> unescape("50%25%2Fday"), unescape("__HIVE_DEFAULT_PARTITION__")
        ('50%/day', None)
    """
    if name == DEFAULT_PARTITION:
        return None
    return _HEX.sub(lambda m: chr(int(m.group(1), 16)), name)


_WRITER_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")


def writer_name(name: str) -> str:
    """A writer id as a file name: letters, digits, ``_ . -`` (others become ``-``).

    Example:
        >>> writer_name("host 1/fleet")
        'host-1-fleet'
    """
    safe = _WRITER_UNSAFE.sub("-", name).strip(".-")[:100]
    if not safe:
        raise LakeError(f"writer id '{name}' has no letter or digit", hint="Give --writer NAME.")
    return safe


def partition_path(table: str, day: str | None, service: str | None) -> str:
    """The folder of one partition, relative to the lake."""
    return f"{table}/day={escape(day)}/service={escape(service)}"
