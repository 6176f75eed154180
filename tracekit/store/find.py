"""``Store.find``: run a structural query, and what it found (:class:`FindResult`).

Example:
    >>> from tracekit import Store
    >>> with Store("fleet.duckdb") as store:
    ...     found = store.find("billing > refunds[status=error]")
    >>> found
    FindResult('billing > refunds[status=error]': 1 run, 1 path)
    >>> found.paths[["run_id", "path"]]
                 run_id               path
    0  28b88073065b8c35  billing > refunds
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import duckdb

from tracekit.store.findparse import Query, parse_query, quote_name
from tracekit.store.findsql import compile_query

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FindResult", "find"]

#: Columns of :attr:`FindResult.runs` (besides ``paths``, the count of paths in the run).
RUN_COLUMNS: Final = ("run_id", "service", "agent", "outcome", "status", "start_at", "duration_ms")

_RUNS: Final = """
SELECT r.run_id, r.service, r.agent, r.outcome, r.status, r.start_at, r.duration_ms,
    m.paths
FROM (SELECT run_id, count(*) AS paths FROM _find_match GROUP BY run_id) m
JOIN runs r ON r.run_id = m.run_id
ORDER BY r.start_ms NULLS LAST, r.run_id
LIMIT $limit
"""

_PATHS: Final = """
SELECT m.run_id, m.invocation_ids, m.agents, m.statuses
FROM _find_match m JOIN runs r ON r.run_id = m.run_id
ORDER BY r.start_ms NULLS LAST, m.run_id, m.invocation_ids
LIMIT $limit
"""


@dataclass(frozen=True, eq=False)
class FindResult:
    """The runs a query matched, and each matching path.

    Attributes:
        query: the query as parsed, written back in its plain form.
        paths: one row a matching path: ``run_id``, ``path`` (the agents
            joined by the query's edges, quoted where a name needs it),
            ``invocation_ids``, ``agents`` and ``statuses`` (lists, one
            element a step; a root run's step shows its run id).
        runs: one row a matching run (``run_id``, ``service``, ``agent``,
            ``outcome``, ``status``, ``start_at``, ``duration_ms``) with
            ``paths``, how many paths matched in it; oldest first.
        total_paths: paths matched (``paths`` holds the first ``limit``).
        total_runs: runs matched (``runs`` holds the first ``limit``).
    """

    query: str
    paths: pd.DataFrame
    runs: pd.DataFrame
    total_paths: int
    total_runs: int

    def __repr__(self) -> str:
        runs, paths = self.total_runs, self.total_paths
        return (
            f"FindResult({self.query!r}: {runs} run{'s' * (runs != 1)},"
            f" {paths} path{'s' * (paths != 1)})"
        )

    def __len__(self) -> int:
        return len(self.paths)

    def to_frame(self) -> pd.DataFrame:
        """One row a path, with its run's service, root agent, outcome and start."""
        runs = self.runs[["run_id", "service", "agent", "outcome", "start_at"]]
        runs = runs.rename(columns={"agent": "root_agent"})
        return self.paths.merge(runs, on="run_id", how="left", sort=False)


def find(con: duckdb.DuckDBPyConnection, text: str, *, limit: int | None = None) -> FindResult:
    """Parse ``text``, run it on the store, and gather the paths and runs.

    ``limit`` keeps the first paths and runs (oldest run first); the totals
    count them all.

    Raises:
        FindSyntaxError: the query does not parse (it names the column).
    """
    query = parse_query(text)
    sql, params = compile_query(query)
    match = con.sql(sql, params=params).to_arrow_table()
    con.register("_find_match", match)
    bound = {"limit": limit if limit is not None else match.num_rows}
    try:
        # through Arrow: DuckDB's own DataFrame of list columns costs twice as much
        paths = con.sql(_PATHS, params=bound).to_arrow_table().to_pandas()
        runs = con.execute(_RUNS, bound).df()
        total_runs = len(runs)
        if limit is not None:
            rows = con.execute("SELECT count(DISTINCT run_id) FROM _find_match").fetchall()
            total_runs = int(rows[0][0]) if rows else 0
    finally:
        con.unregister("_find_match")
    paths.insert(1, "path", _path_texts(query, paths["agents"].tolist()))
    return FindResult(str(query), paths, runs, match.num_rows, total_runs)


def _path_texts(query: Query, agents: list[list[str | None]]) -> list[str]:
    """Each path's agents joined by the query's edges (the few distinct ones written once)."""
    cache: dict[tuple[str | None, ...], str] = {}
    out = []
    for names in agents:
        key = tuple(names)
        text = cache.get(key)
        if text is None:
            parts = [quote_name(names[0]) if names[0] is not None else "?"]
            for edge, name in zip(query.edges, names[1:], strict=True):
                parts += [edge, quote_name(name) if name is not None else "?"]
            text = cache[key] = " ".join(parts)
        out.append(text)
    return out
