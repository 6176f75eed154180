"""The engines that read a lake, and every difference between them, in one place.

The store's analyses (the fleet report's queries, the classification's) are
written once, in DuckDB's SQL. Over a lake they run on:

* **DuckDB** (:func:`duckdb_lake`): an in-memory connection whose views
  ``events``, ``invocations``, ``runs``, ``steps``, ``fleet_calls`` read the
  lake's Parquet; the SQL runs as written.
* **Spark** (:class:`SparkLake`, through Spark Connect): the same views over
  the same files; each statement is transpiled by sqlglot from DuckDB's
  dialect to Spark's (:func:`to_spark`), with its parameters written in as
  literals. sqlglot handles 1-based list indexes, ``NULLS LAST`` defaults,
  ``string_agg`` (``LISTAGG``), JSON paths (``GET_JSON_OBJECT``) and
  timestamps without time zone (``TIMESTAMP_NTZ``); this module adds what it
  does not: an exact ``quantile_cont`` becomes Spark's exact ``PERCENTILE``
  (never ``percentile_approx``: an approximation is the separate
  ``approx_quantile``), and the session reads times in UTC and partition
  values as text.

Both answer ``execute(sql, params)`` with a cursor (``description``,
``fetchall``, ``fetchone``), as a DuckDB connection does, so the fleet report
and the classification take either.

Example:
    >>> print(to_spark("SELECT q[1] FROM (SELECT quantile_cont(d, [0.5]) AS q FROM t"
    ...     " WHERE service = ?)", ["a'b"]))
    SELECT q[0] FROM (SELECT PERCENTILE(d, ARRAY(0.5)) AS q FROM t WHERE service = 'a\\'b')
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final

import duckdb

from tracekit._util.extras import install_line
from tracekit.errors import LakeError
from tracekit.lake.layout import LATER_COLUMNS, LATER_TABLES, TABLES

__all__ = [
    "Cursor",
    "SparkLake",
    "duckdb_lake",
    "lake_tables",
    "literal",
    "mixed_tables",
    "open_lake",
    "to_spark",
]

PathLike = str | os.PathLike[str]

# Spark's type names as DuckDB names them (the fleet's frames type columns by these).
_DUCK_TYPES: Final = {
    "StringType": "VARCHAR",
    "LongType": "BIGINT",
    "IntegerType": "INTEGER",
    "DoubleType": "DOUBLE",
    "FloatType": "FLOAT",
    "BooleanType": "BOOLEAN",
    "TimestampNTZType": "TIMESTAMP",
    "TimestampType": "TIMESTAMP",
    "DateType": "DATE",
}


def mixed_tables(lake: PathLike) -> set[str]:
    """The tables whose writers hold different columns (a reader then matches them by name).

    Matching by name reads every file's footer when the view is made, so it is
    done only where needed: otherwise a window opens only the files it needs.
    """
    from tracekit.lake.export import writer_manifests

    seen: dict[str, list[Any]] = {}
    mixed = set()
    for manifest in writer_manifests(lake).values():
        for name, entry in manifest["tables"].items():
            if seen.setdefault(name, entry["columns"]) != entry["columns"]:
                mixed.add(name)
    return mixed


def lake_tables(lake: PathLike) -> dict[str, list[tuple[str, str]]]:
    """Each table the lake holds and its columns (name, DuckDB type), over every writer.

    Writers of different versions may hold different columns: the union is
    read, a column a writer lacks being NULL in its rows.

    Raises:
        LakeError: no lake at ``lake`` (no manifest: nothing was exported there).
    """
    from tracekit.lake.export import writer_manifests

    merged: dict[str, dict[str, str]] = {}
    for manifest in writer_manifests(lake).values():
        for name, entry in manifest["tables"].items():
            table = merged.setdefault(name, {})
            for column, kind in entry["columns"]:
                table.setdefault(str(column), "VARCHAR" if kind == "JSON" else str(kind))
    for name, later in LATER_COLUMNS.items():
        for column, kind in later:
            if name in merged:
                merged[name].setdefault(column, kind)
    for name, columns in LATER_TABLES.items():
        if merged and name not in merged:  # every writer predates the table: empty
            merged[name] = dict(columns)
    return {
        name: [
            *[(c, k) for c, k in columns.items() if c not in ("day", "service")],
            ("day", "VARCHAR"),
            ("service", "VARCHAR"),
        ]
        for name, columns in merged.items()
    }


def _absent(lake: PathLike, name: str) -> list[str]:
    """The later columns of ``name`` no writer holds, as NULL select items."""
    from tracekit.lake.export import writer_manifests

    held = {
        str(column)
        for manifest in writer_manifests(lake).values()
        for column, _ in manifest["tables"].get(name, {}).get("columns", ())
    }
    return [
        f'CAST(NULL AS {kind}) AS "{column}"'
        for column, kind in LATER_COLUMNS.get(name, ())
        if column not in held
    ]


def _empty_select(columns: list[tuple[str, str]]) -> str:
    """A query with the table's columns and no rows: a table no partition holds yet."""
    cols = ", ".join(f'CAST(NULL AS {kind}) AS "{name}"' for name, kind in columns)
    return f"SELECT {cols} WHERE FALSE"


def duckdb_lake(lake: PathLike, *, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view for each table of the lake.

    Partition values are read as text (``hive_types``), as Spark reads them
    with type inference off: a service named ``123`` stays a name.

    Raises:
        LakeError: no lake at ``lake``.
    """
    tables = lake_tables(lake)
    con = duckdb.connect(
        config={
            "memory_limit": memory_limit or os.environ.get("TRACEKIT_DB_MEMORY", "1GB"),
            "preserve_insertion_order": False,
        }
    )
    con.execute("SET enable_progress_bar = false")
    con.execute("SET TimeZone = 'UTC'")
    # Spill beyond the memory limit to the system's temporary folder, not to ./.tmp.
    spill = os.path.join(tempfile.gettempdir(), f"tracekit-duckdb-{os.getpid()}")
    con.execute(f"SET temp_directory = '{spill.replace(chr(39), chr(39) * 2)}'")
    try:
        _views(con, lake, tables, mixed_tables(lake))
    except duckdb.Error as exc:
        con.close()
        raise LakeError(f"{lake}: cannot read the lake ({str(exc).splitlines()[0]})") from None
    return con


def _views(
    con: duckdb.DuckDBPyConnection,
    lake: PathLike,
    tables: dict[str, list[tuple[str, str]]],
    mixed: set[str],
) -> None:
    for name, columns in tables.items():
        if next((Path(lake) / name).glob("*/*/*.parquet"), None) is None:
            con.execute(f"CREATE VIEW {name} AS {_empty_select(columns)}")
            continue
        glob = str(Path(lake) / name / "*" / "*" / "*.parquet").replace("'", "''")
        extra = "".join(", " + item for item in _absent(lake, name))
        con.execute(
            f"""CREATE VIEW {name} AS SELECT *{extra} FROM read_parquet('{glob}',
                hive_partitioning = true, union_by_name = {name in mixed},
                hive_types = {{'day': VARCHAR, 'service': VARCHAR}})"""
        )


def literal(value: Any) -> str:
    """A parameter as a DuckDB literal (strings quoted, times as ``TIMESTAMP '...'``).

    Example:
        >>> literal("it's"), literal(None), literal(datetime(2026, 1, 2, 3, 4, 5))
        ("'it''s'", 'NULL', "TIMESTAMP '2026-01-02 03:04:05'")
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise LakeError(f"cannot pass a {type(value).__name__} to a lake query")


def _inline(sql: str, params: Sequence[Any]) -> str:
    """Write each ``?`` placeholder as its literal (found by the tokenizer, not in strings)."""
    from sqlglot.dialects.duckdb import DuckDB
    from sqlglot.tokens import TokenType

    tokens = [t for t in DuckDB().tokenize(sql) if t.token_type == TokenType.PLACEHOLDER]
    if len(tokens) != len(params):
        raise LakeError(f"{len(tokens)} placeholders, {len(params)} parameters")
    for token, value in reversed(list(zip(tokens, params, strict=True))):
        sql = sql[: token.start] + literal(value) + sql[token.end + 1 :]
    return sql


def _exact_percentiles(node: Any) -> Any:
    """``quantile_cont``: Spark's ``PERCENTILE`` is exact (``PERCENTILE_CONT`` with
    ``WITHIN GROUP`` is too, but takes one fraction); ``approx_quantile`` stays approximate."""
    from sqlglot import exp

    if isinstance(node, exp.PercentileCont) and node.args.get("expression") is not None:
        return exp.Anonymous(this="PERCENTILE", expressions=[node.this, node.expression])
    return node


def _distinct_list(node: Any) -> Any:
    """``string_agg(DISTINCT x, sep ORDER BY x)`` (a FILTER kept on the aggregate):
    Spark's ``LISTAGG`` refuses DISTINCT with its own order, so the distinct
    values are collected, sorted (Spark and DuckDB both compare strings by
    their UTF-8 bytes) and joined."""
    from sqlglot import exp

    where = None
    agg = node
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.GroupConcat):
        agg, where = node.this, node.expression
    if not isinstance(agg, exp.GroupConcat):
        return node
    order = agg.this
    distinct = order.this if isinstance(order, exp.Order) else order
    if not isinstance(distinct, exp.Distinct) or len(distinct.expressions) != 1:
        return node
    values: exp.Expression = exp.Anonymous(
        this="COLLECT_SET", expressions=[distinct.expressions[0]]
    )
    if where is not None:
        values = exp.Filter(this=values, expression=where)
    separator = agg.args.get("separator") or exp.Literal.string(",")
    return exp.Anonymous(
        this="ARRAY_JOIN",
        expressions=[exp.Anonymous(this="ARRAY_SORT", expressions=[values]), separator],
    )


def to_spark(sql: str, params: Sequence[Any] | None = None) -> str:
    """DuckDB SQL (with ``?`` parameters) as Spark SQL: the one translation.

    Raises:
        LakeError: the statement cannot be translated.
    """
    import sqlglot

    try:
        tree = sqlglot.parse_one(_inline(sql, params or []), read="duckdb")
        tree = tree.transform(_exact_percentiles).transform(_distinct_list)
        return tree.sql(dialect="spark")
    except sqlglot.errors.SqlglotError as exc:
        raise LakeError(f"cannot translate a query for Spark ({exc})") from None


class Cursor:
    """A query's answer, as a DuckDB connection gives it (``description``, ``fetchall``)."""

    def __init__(self, description: list[tuple[str, str]], rows: list[tuple[Any, ...]]) -> None:
        self.description = description
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every row."""
        return self._rows

    def fetchone(self) -> tuple[Any, ...] | None:
        """The first row, if any."""
        return self._rows[0] if self._rows else None


def _import_spark() -> Any:
    # pyspark warns about pandas versions it has not been tested with; the
    # client never converts to pandas here, so that warning is noise.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            import pyspark.sql.connect.session  # noqa: F401 - loads Spark Connect's client
            from pyspark.sql import SparkSession
        except ImportError as exc:
            raise LakeError(
                f"the Spark engine needs pyspark with Spark Connect ({exc})",
                hint=install_line("spark"),
            ) from None
    return SparkSession


def _check_reachable(remote: str, timeout: float = 10.0) -> None:
    """Fail in seconds, not after the client's minutes of retries, when nothing listens."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(remote.split(";", 1)[0])
    if url.scheme != "sc" or not url.hostname:
        raise LakeError(f"'{remote}' is not a Spark Connect address", hint="Use sc://HOST:15002.")
    try:
        socket.create_connection((url.hostname, url.port or 15002), timeout=timeout).close()
    except OSError as exc:
        raise LakeError(
            f"Spark at {remote}: cannot connect ({exc.strerror or exc})",
            hint="Start a Spark Connect server (docs/scale-out.md) or check --remote.",
        ) from None


class SparkLake:
    """A lake read by Spark through Spark Connect: the same views, the same SQL.

    Args:
        lake: the lake folder, as the Spark cluster sees it (a shared path or URL).
        remote: the Spark Connect address, ``sc://HOST:15002``.

    Raises:
        LakeError: pyspark is missing, or the server cannot be reached.
    """

    def __init__(self, lake: PathLike, remote: str, *, check: bool = True) -> None:
        _check_reachable(remote)
        session = _import_spark()
        # The server resolves a relative path against its own folder: give it ours.
        self.lake = str(lake) if "://" in str(lake) else os.path.abspath(lake)
        tables = lake_tables(lake) if check else {}
        self._mixed = mixed_tables(lake) if check else set()
        self._absent = {name: _absent(lake, name) for name in tables}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                self.spark = session.builder.remote(remote).getOrCreate()
            # Times come back as written (naive UTC), names in folders stay names.
            self.spark.conf.set("spark.sql.session.timeZone", "UTC")
            self.spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
            for name, columns in tables.items():
                self._view(name, columns)
        except LakeError:
            raise
        except Exception as exc:  # grpc and Spark errors have no common base to catch
            raise LakeError(
                f"Spark at {remote}: {str(exc).strip().splitlines()[0][:300]}",
                hint="Start a Spark Connect server (docs/scale-out.md) or check --remote.",
            ) from None

    def _view(self, name: str, columns: list[tuple[str, str]]) -> None:
        folder = os.path.join(self.lake, name)
        if next(Path(folder).glob("*/*/*.parquet"), None) is None:
            frame = self.spark.sql(to_spark(_empty_select(columns)))
        else:
            reader = self.spark.read.option("basePath", folder)
            reader = reader.option("mergeSchema", str(name in self._mixed).lower())
            frame = reader.parquet(folder)
            if self._absent.get(name):
                frame = frame.selectExpr("*", *self._absent[name])
        frame.createOrReplaceTempView(name)

    def view(self, name: str, sql: str, params: Sequence[Any] | None = None) -> None:
        """Name a query (DuckDB SQL) as a temporary view for later statements."""
        self.spark.sql(to_spark(sql, params)).createOrReplaceTempView(name)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        """Run one DuckDB-dialect statement on Spark and collect its rows."""
        try:
            frame = self.spark.sql(to_spark(sql, params))
            rows = [tuple(row) for row in frame.collect()]
        except LakeError:
            raise
        except Exception as exc:
            raise LakeError(
                f"Spark query failed: {str(exc).strip().splitlines()[0][:300]}"
            ) from None
        description = [
            (f.name, _DUCK_TYPES.get(type(f.dataType).__name__, "VARCHAR"))
            for f in frame.schema.fields
        ]
        return Cursor(description, rows)

    def close(self) -> None:
        """Drop the views (the server's session stays for the next client)."""
        for name in TABLES:
            self.spark.catalog.dropTempView(name)


@contextlib.contextmanager
def open_lake(
    lake: PathLike, *, engine: str = "duckdb", remote: str | None = None
) -> Iterator[duckdb.DuckDBPyConnection | SparkLake]:
    """A lake opened on an engine, closed afterwards.

    Args:
        lake: the lake folder.
        engine: ``"duckdb"`` (in this process) or ``"spark"`` (through ``remote``).
        remote: the Spark Connect address (``sc://HOST:15002``); Spark only.

    Raises:
        LakeError: an unknown engine, Spark without ``remote``, or no lake there.
    """
    if engine == "duckdb":
        if remote is not None:
            raise LakeError("--remote is for --engine spark", hint="Add --engine spark.")
        con = duckdb_lake(lake)
        try:
            yield con
        finally:
            con.close()
    elif engine == "spark":
        if not remote:
            raise LakeError(
                "the Spark engine needs the address of a Spark Connect server",
                hint="Add --remote sc://HOST:15002 (docs/scale-out.md starts one locally).",
            )
        spark = SparkLake(lake, remote)
        try:
            yield spark
        finally:
            spark.close()
    else:
        raise LakeError(f"no engine '{engine}'", hint="Use duckdb or spark.")
