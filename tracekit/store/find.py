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

from typing import TYPE_CHECKING, Any, Final, NamedTuple

import duckdb

from tracekit._util.plain_frame import PlainFrame
from tracekit.store.findparse import Query, parse_query, quote_name
from tracekit.store.findsql import compile_page

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["FindResult", "find"]

_PATH_COLUMNS: Final = ["run_id", "path", "invocation_ids", "agents", "statuses"]
_RUN_COLUMNS: Final = [
    "run_id",
    "service",
    "agent",
    "outcome",
    "status",
    "start_at",
    "duration_ms",
    "paths",
]


class _Fetched(NamedTuple):
    """A table as DuckDB gave it: plain values, and each column's DuckDB type."""

    rows: PlainFrame
    types: list[str]


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
        notes: when nothing matched, why it may be: an agent the query names
            that is in no run, with the nearest names that are.

    ``paths`` and ``runs`` are pandas DataFrames, made (and pandas imported)
    on first use; :meth:`arrow` gives the same two tables as Arrow, and
    :meth:`rows` as plain columns, which is what ``tracekit find`` prints
    from, with neither pandas nor pyarrow.
    """

    def __init__(
        self,
        query: str,
        paths: pd.DataFrame | pa.Table | _Fetched,
        runs: pd.DataFrame | pa.Table | _Fetched,
        total_paths: int,
        total_runs: int,
        notes: tuple[str, ...] = (),
    ) -> None:
        self.query, self.total_paths, self.total_runs = query, total_paths, total_runs
        self.notes = notes
        self._paths, self._runs = paths, runs

    def __repr__(self) -> str:
        runs, paths = self.total_runs, self.total_paths
        return (
            f"FindResult({self.query!r}: {runs} run{'s' * (runs != 1)},"
            f" {paths} path{'s' * (paths != 1)})"
        )

    def __len__(self) -> int:
        return len(self._paths.rows if isinstance(self._paths, _Fetched) else self._paths)

    @property
    def paths(self) -> pd.DataFrame:
        """The matching paths as a DataFrame (see the class's attributes)."""
        self._paths = _frame(self._paths)
        return self._paths

    @property
    def runs(self) -> pd.DataFrame:
        """The matching runs as a DataFrame (see the class's attributes)."""
        self._runs = _frame(self._runs)
        return self._runs

    def arrow(self) -> tuple[pa.Table, pa.Table]:
        """The paths and the runs as Arrow tables, in the DataFrames' columns and order."""
        return _table(self._paths), _table(self._runs)

    def rows(self) -> tuple[PlainFrame, PlainFrame]:
        """The paths and the runs as plain columns (no pandas; no pyarrow for a store's answer)."""
        return _rows(self._paths), _rows(self._runs)

    def to_frame(self) -> pd.DataFrame:
        """One row a path, with its run's service, root agent, outcome and start."""
        runs = self.runs[["run_id", "service", "agent", "outcome", "start_at"]]
        runs = runs.rename(columns={"agent": "root_agent"})
        return self.paths.merge(runs, on="run_id", how="left", sort=False)


def _frame(data: pd.DataFrame | pa.Table | _Fetched) -> pd.DataFrame:
    import pyarrow as pa

    if isinstance(data, _Fetched):
        data = _table(data)
    return data.to_pandas() if isinstance(data, pa.Table) else data


def _table(data: pd.DataFrame | pa.Table | _Fetched) -> pa.Table:
    import pyarrow as pa

    if isinstance(data, _Fetched):
        fields = [
            pa.field(n, _arrow_type(t)) for n, t in zip(data.rows.names, data.types, strict=True)
        ]
        return pa.table(data.rows.columns, schema=pa.schema(fields))
    return data if isinstance(data, pa.Table) else pa.Table.from_pandas(data, preserve_index=False)


def _arrow_type(duckdb_type: str) -> pa.DataType:
    """The Arrow type DuckDB gives a column of this type (the ones a result has)."""
    import pyarrow as pa

    if duckdb_type.endswith("[]"):
        return pa.list_(pa.field("l", _arrow_type(duckdb_type[:-2])))
    return {
        "VARCHAR": pa.string(),
        "TIMESTAMP": pa.timestamp("us"),
        "DOUBLE": pa.float64(),
        "BIGINT": pa.int64(),
    }[duckdb_type]


def _rows(data: pd.DataFrame | pa.Table | _Fetched) -> PlainFrame:
    return data.rows if isinstance(data, _Fetched) else PlainFrame.from_arrow(_table(data))


def find(con: duckdb.DuckDBPyConnection, text: str, *, limit: int | None = None) -> FindResult:
    """Parse ``text``, run it on the store, and gather the paths and runs.

    ``limit`` keeps the first paths and runs (oldest run first); the totals
    count them all. One statement gives the page and the totals, fetched as
    plain rows: pandas and pyarrow are imported only when the result's
    ``paths``, ``runs``, ``to_frame()`` or ``arrow()`` is asked for.

    Raises:
        FindSyntaxError: the query does not parse (it names the column).
    """
    query = parse_query(text)
    sql, params = compile_page(query, limit)
    relation = con.sql(sql, params=params)
    types = [str(t) for t in relation.types][2:]  # after part and n
    parts: dict[int, list[tuple[Any, ...]]] = {0: [], 1: []}
    total_paths = total_runs = 0
    for row in relation.fetchall():
        if row[0] == 2:
            total_paths, total_runs = row[1], row[-1]
        else:
            parts[row[0]].append(row[2:])
    paths = _paths_of(query, parts[0], types)
    runs = _runs_of(parts[1], types)
    notes = _unknown_agents(con, query) if not total_paths else ()
    return FindResult(str(query), paths, runs, total_paths, total_runs, notes)


def _paths_of(query: Query, rows: list[tuple[Any, ...]], types: list[str]) -> _Fetched:
    """The page's paths: run id, the path as the query writes it, the three lists."""
    texts = _path_texts(query, [row[2] for row in rows])
    table = [(row[0], text, *row[1:4]) for row, text in zip(rows, texts, strict=True)]
    kinds = [types[0], "VARCHAR", *types[1:4]]
    return _Fetched(PlainFrame.from_fetched(_PATH_COLUMNS, kinds, table), kinds)


def _runs_of(rows: list[tuple[Any, ...]], types: list[str]) -> _Fetched:
    """The page's runs: the run's columns and the paths matched in it."""
    table = [(row[0], *row[4:]) for row in rows]
    kinds = [types[0], *types[4:]]
    return _Fetched(PlainFrame.from_fetched(_RUN_COLUMNS, kinds, table), kinds)


def _unknown_agents(con: duckdb.DuckDBPyConnection, query: Query) -> tuple[str, ...]:
    """A line for each agent the query names that no invocation has, with near names."""
    import difflib

    named = sorted({step.agent for step in query.steps if step.agent is not None})
    if not named:
        return ()
    known = [
        str(row[0])
        for row in con.execute(
            "SELECT agent FROM invocations WHERE agent IS NOT NULL"
            " UNION SELECT agent FROM runs WHERE agent IS NOT NULL"
        ).fetchall()
    ]
    notes = []
    for agent in (a for a in named if a not in set(known)):
        near = difflib.get_close_matches(agent, known, n=3)
        hint = f"; did you mean {' or '.join(map(quote_name, near))}?" if near else ""
        notes.append(f"no agent {quote_name(agent)} in any run{hint}")
    return tuple(notes)


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
