"""Two stores compared table by table (EXCEPT ALL both ways)."""

from __future__ import annotations

from pathlib import Path

import duckdb

# Times of the ingest itself, and each record's position in its line: not the records.
_SKIP = {"ingest_id", "item", "started_at", "finished_at", "applied_at", "classified_at"}


def differences(
    a: Path, b: Path, tables: tuple[str, ...] = (), skip: frozenset[str] = frozenset()
) -> list[tuple[str, int, int]]:
    """``(table, rows only in a, rows only in b)`` for each table that differs (EXCEPT ALL both ways).

    ``tables`` limits the comparison to those tables (all when empty);
    ``skip`` names more columns to leave out.
    """
    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    everything = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'a' ORDER BY 1"
    ).fetchall()
    found = []
    for (table,) in [(t,) for (t,) in everything if not tables or t in tables]:
        names = con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'a' AND table_name = ?",
            [table],
        ).fetchall()
        cols = ", ".join(f'"{n}"' for (n,) in names if n not in _SKIP and n not in skip)
        only = [
            con.execute(
                f"SELECT count(*) FROM (SELECT {cols} FROM {x}.{table}"
                f" EXCEPT ALL SELECT {cols} FROM {y}.{table})"
            ).fetchall()[0][0]
            for x, y in (("a", "b"), ("b", "a"))
        ]
        if any(only):
            found.append((table, *only))
    con.close()
    return found
