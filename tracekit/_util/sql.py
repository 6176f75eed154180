"""What every module that runs SQL on a store shares: a store-or-connection, and scripts.

Example:
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> run_script(con, "CREATE TABLE t (n INT);\\nINSERT INTO t VALUES ($n)", {"n": 7})
    >>> connection(con).execute("SELECT n FROM t").fetchall()
    [(7,)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:  # a type only: this module never imports duckdb
    import duckdb

__all__ = ["HasConnection", "StoreOrConnection", "connection", "run_script"]


class HasConnection(Protocol):
    """Anything holding an open DuckDB connection as ``con``: a ``Store``, say."""

    con: duckdb.DuckDBPyConnection


StoreOrConnection: TypeAlias = "HasConnection | duckdb.DuckDBPyConnection"


def connection(store: StoreOrConnection) -> duckdb.DuckDBPyConnection:
    """The connection itself, given a store (anything with ``con``) or a connection."""
    con = getattr(store, "con", None)
    return store if con is None else con  # type: ignore[return-value]


def run_script(
    con: duckdb.DuckDBPyConnection, script: str, params: dict[str, Any] | None = None
) -> None:
    """Run the statements of ``script``, each ending with ``;`` and a newline.

    Each statement is given those of ``params`` it names as ``$name``
    (DuckDB refuses a parameter a statement does not use; a ``'$.path'`` of
    JSON is no parameter).
    """
    for statement in (s.strip() for s in script.split(";\n")):
        if statement:
            used = {k: v for k, v in (params or {}).items() if f"${k}" in statement}
            con.execute(statement, used or None)
