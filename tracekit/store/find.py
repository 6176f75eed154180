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

from typing import TYPE_CHECKING, Final

import duckdb

from tracekit.store.findparse import Query, parse_query, quote_name
from tracekit.store.findsql import compile_query

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["FindResult", "find"]

_PATH_COLUMNS: Final = ["run_id", "invocation_ids", "agents", "statuses"]
_RUN_COLUMNS: Final = ["run_id", "service", "agent", "outcome", "status", "start_at", "duration_ms"]

# The match with its run, oldest run first: one statement; the runs are
# gathered from it in Arrow (their rows are together, in order).
_RESULT: Final = """
WITH m AS ({match})
SELECT m.run_id, m.invocation_ids, m.agents, m.statuses, r.service, r.agent, r.outcome,
    r.status, r.start_at, r.duration_ms
FROM m JOIN runs r ON r.run_id = m.run_id
ORDER BY r.start_ms NULLS LAST, m.run_id, m.invocation_ids
"""


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
    on first use; :meth:`arrow` gives the same two tables as Arrow, which is
    what ``tracekit find`` prints from, without pandas.
    """

    def __init__(
        self,
        query: str,
        paths: pd.DataFrame | pa.Table,
        runs: pd.DataFrame | pa.Table,
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
        return len(self._paths)

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

    def to_frame(self) -> pd.DataFrame:
        """One row a path, with its run's service, root agent, outcome and start."""
        runs = self.runs[["run_id", "service", "agent", "outcome", "start_at"]]
        runs = runs.rename(columns={"agent": "root_agent"})
        return self.paths.merge(runs, on="run_id", how="left", sort=False)


def _frame(data: pd.DataFrame | pa.Table) -> pd.DataFrame:
    import pyarrow as pa

    return data.to_pandas() if isinstance(data, pa.Table) else data


def _table(data: pd.DataFrame | pa.Table) -> pa.Table:
    import pyarrow as pa

    return data if isinstance(data, pa.Table) else pa.Table.from_pandas(data, preserve_index=False)


def find(con: duckdb.DuckDBPyConnection, text: str, *, limit: int | None = None) -> FindResult:
    """Parse ``text``, run it on the store, and gather the paths and runs.

    ``limit`` keeps the first paths and runs (oldest run first); the totals
    count them all. The result holds Arrow tables: pandas is imported only
    when its ``paths``, ``runs`` or ``to_frame()`` is asked for.

    Raises:
        FindSyntaxError: the query does not parse (it names the column).
    """
    query = parse_query(text)
    sql, params = compile_query(query)
    # through Arrow: DuckDB's own DataFrame of list columns costs twice as much
    table = con.sql(_RESULT.format(match=sql), params=params).to_arrow_table()
    shown = table.num_rows if limit is None else limit
    paths = table.slice(0, shown).select(_PATH_COLUMNS)
    texts = _path_texts(query, paths["agents"].to_pylist())
    paths = paths.add_column(1, "path", _strings(texts))
    runs, total_runs = _runs_of(table, shown)
    notes = _unknown_agents(con, query) if not table.num_rows else ()
    return FindResult(str(query), paths, runs, table.num_rows, total_runs, notes)


def _runs_of(table: pa.Table, shown: int) -> tuple[pa.Table, int]:
    """The first ``shown`` distinct runs of ``table`` (their rows are together), with path counts."""
    import pyarrow as pa

    # plain Python over the run ids: pyarrow.compute alone costs more to import
    ids = table["run_id"].to_pylist()
    firsts: list[int] = []
    counts: list[int] = []
    previous = object()
    for i, run_id in enumerate(ids):
        if run_id != previous:
            firsts.append(i)
            counts.append(0)
            previous = run_id
        counts[-1] += 1
    keep = firsts[:shown]
    # Table.take imports pyarrow.compute, pa.array pandas: one-row slices instead
    runs = table.select(_RUN_COLUMNS)
    picked = pa.concat_tables([runs.slice(i, 1) for i in keep]) if keep else runs.slice(0, 0)
    return picked.append_column("paths", _int64s(counts[:shown])), len(firsts)


def _int64s(values: list[int]) -> pa.Array:
    """An Arrow int64 array of ``values`` (``pa.array`` would import pandas)."""
    import array

    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.int64(), len(values), [None, pa.py_buffer(array.array("q", values))]
    )


def _strings(values: list[str]) -> pa.Array:
    """An Arrow string array of ``values`` (``pa.array`` would import pandas)."""
    import array

    import pyarrow as pa

    data = [v.encode() for v in values]
    offsets = array.array("i", [0])
    for item in data:
        offsets.append(offsets[-1] + len(item))
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers)


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
