"""``Store``: a DuckDB file holding a fleet of runs, and the ways to read it.

Example:
    >>> store = Store("fleet.duckdb")
    >>> print(store.ingest("sample_traces/child_failure.jsonl").reconciliation())
    ingested 1 source: 10 lines read = 10 accepted + 0 rejected + 0 duplicates
    >>> failed = store.runs(status="error", since="24h")  # the sample's run is older
    >>> failed[["agent", "service", "outcome"]]
         agent       service           outcome
    0   triage  support-desk  failed:recursion
    1  planner  research-hub      failed:child
    >>> store.close()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import duckdb

from tracekit._util.text import escape
from tracekit.errors import RunNotFoundError, StoreError
from tracekit.store.db import connect, default_path, take_notices
from tracekit.store.query import check_names, check_read_only, rejects_query, runs_query

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from tracekit.events import Event
    from tracekit.intake.otlp.derivation import Derived
    from tracekit.intake.otlp.dialect import Dialect
    from tracekit.store.cause import RootCause
    from tracekit.store.find import FindResult
    from tracekit.store.ingest import Format, IngestReport, ProgressFactory, Stop
    from tracekit.store.rederive import ProgressFactory as TraceProgress
    from tracekit.store.rederive import RederiveReport
    from tracekit.store.spans import SpanLoad
    from tracekit.tree import AgentTree

__all__ = ["Store"]

PathLike = str | os.PathLike[str]


# From the root runs ``roots``, to the enter/exit records (``other``) of the same
# source file that reuse one of their invocation ids.
_TIED: Final = """
    JOIN invocations mine ON mine.root_run_id = roots.root
    JOIN events me ON me.run_id = mine.run_id AND me.invocation_id = mine.invocation_id
        AND me.type IN ('enter', 'exit')
    JOIN events other ON other.invocation_id = me.invocation_id AND other.source = me.source
        AND other.type IN ('enter', 'exit')
"""


_Result = TypeVar("_Result")


def _frame(cursor: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return cursor.df()


class Store:
    """A trace store: one DuckDB file, many runs.

    Args:
        path: the file; ``$TRACEKIT_DB`` or ``./tracekit.duckdb`` by default.
        read_only: open without writing (several readers may share a file).
        wait: seconds to keep trying while another process holds the file.

    Raises:
        StoreLockedError: another process holds the store (still, after ``wait``).
        StoreError: read-only and there is no store at ``path``.
    """

    _borrowed = False  # a view through another's connection (Store.over)

    def __init__(
        self, path: PathLike | None = None, *, read_only: bool = False, wait: float = 0.0
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.read_only = read_only
        self.con: duckdb.DuckDBPyConnection = connect(self.path, read_only=read_only, wait=wait)
        #: What opening it had to say (what a migration could not keep), once.
        self.notices: list[str] = take_notices(self.path)

    @classmethod
    def over(cls, con: duckdb.DuckDBPyConnection, path: PathLike) -> Store:
        """A read-only view of a store through a connection already open on it.

        ``tracekit serve`` holds its store's file; each request reads through a
        cursor of that one database, wrapped here so that it has the same read
        methods as a store opened by path. Closing the view closes ``con``.
        """
        view = cls.__new__(cls)
        view.path = Path(path)
        view.read_only = True
        view.con = con
        view._borrowed = True  # the database is writable: sql() must still roll back
        view.notices = []
        return view

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def close(self) -> None:
        """Close the connection (and release the file lock)."""
        self.con.close()

    def ingest(
        self,
        paths: PathLike | Iterable[PathLike],
        format: Format = "auto",
        *,
        progress: ProgressFactory | None = None,
        stop: Stop | None = None,
        dialects: Sequence[Dialect] = (),
    ) -> IngestReport:
        """Ingest trace files, directories, globs or ``-``, then classify the runs it touched.

        Classification (:func:`tracekit.store.classify.classify_store`) is part of
        every write, in the transaction that derives the runs, so that every
        read of the store is read-only and never sees a run unclassified.

        Args:
            paths: one path or several.
            format: ``"auto"`` (by content), ``"tracekit"`` (v1 JSONL) or ``"otlp"``.
            progress: called with (total bytes, sources); returns a callable
                given the bytes read after each chunk.
            stop: asked after each chunk; a signal number it returns stops
                the ingest, which then raises ``IngestInterrupted`` and keeps
                nothing of what it read (``tracekit ingest`` on Ctrl-C).
            dialects: the user's dialects for OTLP spans (``--dialect FILE``).

        Example:
            >>> with Store("samples.duckdb") as store:
            ...     print(store.ingest("sample_traces/recursion_circle.jsonl").totals.accepted)
            11
        """
        from tracekit.store.ingest import ingest_paths  # pyarrow: only when ingesting

        self._writable()
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        from tracekit.intake.otlp.dialects import using

        with using(dialects):
            return ingest_paths(self.con, paths, format=format, progress=progress, stop=stop)

    def ingest_records(
        self,
        lines: list[bytes],
        *,
        source: str,
        first_line: int = 1,
        refused: list[tuple[int, str, str]] | None = None,
    ) -> IngestReport:
        """Ingest v1 records already encoded as JSON lines (what :class:`StoreSink` buffers).

        The runs they touch are classified, as by :meth:`ingest`. ``refused``
        are lines found bad before (``(line, raw, reason)``): counted as
        read and rejected, and kept in ``rejects``.
        """
        from tracekit.store.ingest import ingest_records

        self._writable()
        return ingest_records(
            self.con, lines, source=source, first_line=first_line, refused=refused
        )

    def rederive(
        self,
        *,
        since: str | None = None,
        service: str | None = None,
        progress: TraceProgress | None = None,
        dialects: Sequence[Dialect] = (),
    ) -> RederiveReport:
        """Derive the stored traces again from their spans under today's rules, and classify.

        Each trace's earlier rows are replaced, so the store equals a fresh
        ingest of the same files. ``since`` (``"2h"``, a date) and ``service``
        choose the traces by their spans' start and service; ``dialects`` are
        the user's (``--dialect FILE``), read with the built-in ones.

        Example:
            >>> with Store("samples.duckdb") as store:
            ...     print(store.rederive(service="no-such-service").line())
            derived 0 traces again: 0 records, 0 runs rebuilt
        """
        from tracekit.intake.otlp.dialects import using
        from tracekit.store.rederive import rederive

        self._writable()
        with using(dialects):
            return rederive(self.con, since=since, service=service, progress=progress)

    def load_spans(
        self, batch: pa.Table, *, source: str, refused: list[tuple[int, str, str]] | None = None
    ) -> SpanLoad:
        """Store received spans (an Arrow table of ``span_schema()``) in one transaction.

        Each span is kept once per (trace, span) id; the traces are derived by
        :meth:`derive_traces`. ``refused``: ``(line, raw, reason)`` kept in ``rejects``.
        """
        from tracekit.store.spans import store_spans

        self._writable()
        return store_spans(self.con, batch, source=source, refused=refused or [])

    def derive_traces(
        self, traces: list[str], *, source: str, dialects: Sequence[Dialect] = ()
    ) -> RederiveReport:
        """Derive these traces from all their stored spans, replacing what they derived before.

        ``dialects``: the user's (``--dialect FILE``), read with the built-in ones.
        """
        from tracekit.intake.otlp.dialects import using
        from tracekit.store.rederive import derive_again

        self._writable()
        with using(dialects):
            return derive_again(self.con, traces, source=source)

    def derive_in_hand(
        self,
        derived: Derived,
        *,
        source: str,
        span_source: str,
        dialects: Sequence[Dialect] = (),
    ) -> RederiveReport:
        """Store traces derived from the spans in hand (a collector's); the rows :meth:`derive_traces` gives.

        Each trace must have no stored span the deriver was not fed, and no
        derived rows yet. ``span_source``: the source its spans were stored under.
        """
        from tracekit.intake.otlp.dialects import using
        from tracekit.store.rederive import derive_in_hand

        self._writable()
        with using(dialects):
            return derive_in_hand(self.con, derived, source=source, span_source=span_source)

    def linked_traces(self) -> list[str]:
        """The traces a stored span's link names (they are derived with the linking trace)."""
        from tracekit.store.spans import linked_traces

        return linked_traces(self.con)

    def underived_traces(self) -> list[str]:
        """The traces with stored spans not derived yet (a collector stopped before it could)."""
        from tracekit.store.rederive import underived_traces

        return underived_traces(self.con)

    def stale(self) -> str | None:
        """What of the store older rules derived, and how to refresh it; None when nothing."""
        from tracekit.store.rederive import stale_notice

        return stale_notice(self.con)

    def runs(
        self,
        *,
        status: str | None = None,
        service: str | None = None,
        agent: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        session: str | None = None,
    ) -> pd.DataFrame:
        """The root runs, newest first, as a DataFrame (columns as in ``docs/store.md``).

        Args:
            status: ``ok``, ``error``, ``running``, or an outcome (``failed``
                matches every ``failed:*``).
            service: only this service.
            agent: runs whose root agent is this, or that invoked it anywhere.
            since: a span back from now (``2h``, ``7d``) or an ISO time.
            limit: at most this many rows.
            session: only the runs of this session (``runs.session_id``).

        Raises:
            StoreError: ``status`` is no status or outcome, or no run has
                ``service`` or ``agent`` (the error lists the known ones).
        """
        check_names(self.con, service=service, agent=agent)
        sql, params = runs_query(
            status=status, service=service, agent=agent, since=since, limit=limit, session=session
        )
        return self.con.execute(sql, params).df()

    def session(self, session_id: str) -> pd.DataFrame:
        """The runs of one session, oldest first, each with its outcome, duration and tokens.

        Raises:
            SessionNotFoundError: no run has this session (the error names some that do).
        """
        from tracekit.store.sessions import session_runs

        return session_runs(self.con, session_id, source=str(self.path))

    def run_row(self, run_id: str) -> pd.DataFrame:
        """The run's row of ``runs``, every column (``docs/store.md``); empty for no root run."""
        return self.con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df()

    def invocations(self, run_id: str | None = None) -> pd.DataFrame:
        """Agent invocations (enter and exit paired), of one root run or all."""
        sql = "SELECT * FROM invocations"
        params: list[Any] = []
        if run_id is not None:
            sql += " WHERE root_run_id = ?"
            params.append(run_id)
        return self.con.execute(sql + " ORDER BY start_ms NULLS LAST, invocation_id", params).df()

    def loops(self, run_id: str | None = None, *, stopped: str | None = None) -> pd.DataFrame:
        """The circles runs went round (the ``loops`` table), of one root run or all.

        One row a run and circle: how it stopped (``limit``, ``silent``,
        ``refused``, ``finished``), the limit, where, and what the circle
        cost (activations, model calls, tokens, time). Without pandas:
        :func:`tracekit.store.circles.loops`.
        """
        from tracekit.store.circles import loops_query

        sql, params = loops_query(run_id, stopped)
        return self.con.execute(sql, params).df()

    def rejects(self, limit: int | None = None) -> pd.DataFrame:
        """Lines that could not be read, oldest first."""
        return self.con.execute(rejects_query(limit)).df()

    def ingest_log(self) -> pd.DataFrame:
        """One row per source per ingest, with its reconciling counts."""
        return self.con.execute("SELECT * FROM ingest_log ORDER BY ingest_id").df()

    def events(self, run_id: str) -> list[Event]:
        """The records of the whole tree a run belongs to, in the order they were read.

        ``run_id`` is a root run or any child run: a child run's records come
        with its root's, so that its tree is drawn as from the root's file.
        The trees of the same source file that give one of its invocation ids
        to another invocation come too (and theirs, in turn): the file keeps
        the first of the two, and so does the tree built from these records.

        Raises:
            RunNotFoundError: no such run.
        """
        root = self._root(run_id)
        rows = self.con.execute(
            f"""
            WITH RECURSIVE roots(root) AS (
                SELECT $1::VARCHAR
                UNION
                SELECT i.root_run_id FROM roots {_TIED}
                JOIN invocations i ON i.run_id = other.run_id
                    AND i.invocation_id = other.invocation_id
                WHERE i.root_run_id IS NOT NULL
            ), r AS (
                SELECT root AS run_id FROM roots
                UNION SELECT run_id FROM invocations WHERE root_run_id IN (SELECT root FROM roots)
                -- a delegation under no root that reuses one of the ids
                UNION SELECT other.run_id FROM roots {_TIED}
            )
            SELECT raw FROM events WHERE run_id IN (SELECT run_id FROM r)
            ORDER BY ingest_id, line, item
            """,
            [root],
        ).fetchall()
        from tracekit.events import decode_event  # msgspec: only when records are read

        return [decode_event(raw) for (raw,) in rows]

    def root_cause(self, run_id: str) -> RootCause | None:
        """Why root run ``run_id`` ended as it did; None for a child run.

        Example:
            >>> store.root_cause("run-fail").outcome  # doctest: +SKIP
            'failed:child'
        """
        from tracekit.store.cause import root_cause

        return root_cause(self.con, run_id)

    def tree(self, run_id: str) -> AgentTree:
        """The delegation tree of a run (a root, or a child run's subtree), as from its file."""
        from tracekit.tree import build_forest

        return build_forest(self.events(run_id)).run(run_id, source=str(self.path)).steps

    def find(self, query: str, *, limit: int | None = None) -> FindResult:
        """Runs and invocation paths matching a structural query (grammar: docs/find.md).

        Args:
            query: steps joined by edges, e.g. ``billing >> refunds[status=error]``.
            limit: keep the first paths and runs, oldest run first (the totals count all).

        Raises:
            FindSyntaxError: the query does not parse; it names the column.

        Example:
            >>> with Store("fleet.duckdb") as store:
            ...     found = store.find("triage ~> *")
            >>> found.total_runs > 0, sorted(set(found.paths["path"]))[:2]
            (True, ['triage ~> billing', 'triage ~> knowledge-base'])
        """
        from tracekit.store.find import find

        return find(self.con, query, limit=limit)

    def sql(self, query: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run one SELECT (or an EXPLAIN of one) and return its result.

        The query is checked by DuckDB's parser, and DuckDB reads no file for
        it (``read_csv``, ``read_text``, ``glob``, ``COPY`` are refused). On a
        read-only store the connection's settings are locked too; on a
        writable one whatever the query did is rolled back.

        Raises:
            StoreError: the query is not one SELECT (the store changes only by
                ingest), or it failed.

        Example:
            >>> Store("fleet.duckdb").sql(
            ...     "SELECT agent, count(*) AS calls FROM invocations"
            ...     " GROUP BY agent ORDER BY calls DESC, agent LIMIT 3"
            ... )
                        agent  calls
            0  knowledge-base     42
            1          critic     17
            2       documents     17
        """
        return self.select(query, params, _frame)

    def select(
        self,
        query: str,
        params: list[Any] | None,
        fetch: Callable[[duckdb.DuckDBPyConnection], _Result],
    ) -> _Result:
        """As :meth:`sql`, the result taken from DuckDB's cursor by ``fetch``.

        ``tracekit sql`` prints plain rows without importing pandas
        (:func:`tracekit.store.listing.listing`); the checks and the rollback are
        :meth:`sql`'s.

        Raises:
            StoreError: the query is not one SELECT, or it failed.
        """
        check_read_only(self.con, query)
        # A SELECT can still move a sequence (nextval): on a writable database,
        # whatever it did is rolled back.
        rollback = not self.read_only or self._borrowed
        if rollback:
            self.con.execute("BEGIN")
        try:
            return fetch(self.con.execute(query, params or []))
        except duckdb.Error as exc:
            raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from None
        finally:
            if rollback:
                self.con.execute("ROLLBACK")

    def _root(self, run_id: str) -> str:
        """The root run of the tree ``run_id`` is in: itself, or a child run's root."""
        row = self.con.execute(
            """
            SELECT run_id FROM runs WHERE run_id = $1
            UNION ALL (
                SELECT root_run_id FROM invocations
                WHERE run_id = $1 AND root_run_id IS NOT NULL LIMIT 1
            )
            LIMIT 1
            """,
            [run_id],
        ).fetchone()
        if row is None:
            raise RunNotFoundError(
                f"{self.path}: no run '{escape(run_id)}'",
                run_id=run_id,
                source=str(self.path),
                hint="List the runs with: tracekit runs --db " + str(self.path),
            )
        return str(row[0])

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only, cannot ingest")
