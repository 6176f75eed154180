"""A parsed ``tracekit find`` query as one SQL statement over the store.

Each step becomes a subquery of the nodes it matches (its agent and
predicates pushed into the scan): invocations, and for the first step also
root runs (``runs``: the root agent, no kind, node or role). Edges become
joins: ``>`` and ``~>`` on the child's ``parent_run_id``, ``>>`` and ``~>>``
through the ``closure`` table (:mod:`tracekit.store.paths`). Values are
always parameters, never spliced into the text.

The statement returns one row a matching path: ``run_id`` (the root run),
and the lists ``invocation_ids`` (a root run's step shows its run id),
``agents`` and ``statuses``, one element a step.
"""

from __future__ import annotations

from typing import Any, Final

from tracekit.store.findparse import Pred, Query, Step

__all__ = ["compile_page", "compile_query"]

# predicate field -> column of invocations (alias i), of runs (alias r) or None
_INV: Final = {
    "status": "i.status",
    "code": "i.error_code",
    "duration": "i.duration_ms",
    "kind": "i.kind",
    "service": "i.service",
    "node": "i.node",
    "depth": "i.depth",
    "role": "i.failure_role",
}
_ROOT: Final = {
    "status": "r.status",
    "code": "r.error_code",
    "duration": "CASE WHEN r.has_end THEN r.duration_ms END",  # none while running
    "service": "r.service",
    "depth": "0",
}
# != keeps what has no value (an ok invocation has no code: code!=TIMEOUT holds)
_OPS: Final = {"=": "=", "!=": "IS DISTINCT FROM", ">": ">", ">=": ">=", "<": "<", "<=": "<="}


class _Params:
    """Named parameters ($p0, $p1, ...) in the order they are made."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def add(self, value: Any) -> str:
        name = f"p{len(self.values)}"
        self.values[name] = value
        return "$" + name


def compile_query(query: Query) -> tuple[str, dict[str, Any]]:
    """The SQL of a query and its parameters.

    Example:
        >>> from tracekit.store.findparse import parse_query
        >>> sql, params = compile_query(parse_query("billing >> refunds[status=error]"))
        >>> params
        {'p0': 'billing', 'p1': 'billing', 'p2': 'refunds', 'p3': 'error'}
        >>> "JOIN closure c1 ON c1.ancestor = s0.node" in sql
        True
    """
    params = _Params()
    steps = range(len(query.steps))
    lists = ", ".join(
        f"[{', '.join(f's{i}.{column}' for i in steps)}] AS {name}"
        for column, name in (("inv", "invocation_ids"), ("agent", "agents"), ("status", "statuses"))
    )
    return _match_sql(query, f"s0.root AS run_id, {lists}", params), params.values


def compile_page(query: Query, limit: int | None) -> tuple[str, dict[str, Any]]:
    """One statement for a page of the answer: the first ``limit`` paths and runs, and the totals.

    Its rows (``part``, ``n``, ``run_id``, the three lists, the run's columns,
    ``paths``): the paths, oldest run first (part 0), then the runs with the
    paths matched in each (part 1), then the totals (part 2: paths in ``n``,
    runs in ``paths``). The match is joined to ``runs`` once and kept; the
    lists are built for the page's rows only (``limit`` None: every row).

    Example:
        >>> from tracekit.store.findparse import parse_query
        >>> sql, params = compile_page(parse_query("billing > refunds"), 50)
        >>> sql.count(" LIMIT 50"), params
        (2, {'p0': 'billing', 'p1': 'billing', 'p2': 'refunds'})
    """
    params = _Params()
    steps = range(len(query.steps))
    flat = ", ".join(f"s{i}.inv AS i{i}, s{i}.agent AS a{i}, s{i}.status AS t{i}" for i in steps)
    match = _match_sql(query, f"s0.root AS run_id, {flat}", params)
    ids = ", ".join(f"i{i}" for i in steps)
    lists = ", ".join(
        "[" + ", ".join(f"{prefix}{i}" for i in steps) + "]" for prefix in ("i", "a", "t")
    )
    cut = "" if limit is None else f" LIMIT {int(limit)}"
    sql = _PAGE.format(match=match, ids=ids, lists=lists, cut=cut)
    return sql, params.values


# The match with its runs' columns, kept (read three times); the first paths
# and runs in the order of their runs' starts (a LIMIT lets DuckDB keep the top
# rows instead of sorting them all), then one row of the totals (part 2:
# total paths in ``n``, total runs in ``paths``). A union keeps no order: ``n``.
_RUN_COLUMNS: Final = ("service", "agent", "outcome", "status", "start_at", "duration_ms")
_COLUMNS: Final = ", ".join(_RUN_COLUMNS)
_NULLS: Final = ", ".join(["NULL"] * len(_RUN_COLUMNS))
_ANY: Final = ", ".join(f"any_value({c}) AS {c}" for c in _RUN_COLUMNS)
_PAGE: Final = f"""
WITH m AS ({{match}}),
j AS MATERIALIZED (
    SELECT m.*, r.start_ms, {", ".join(f"r.{c}" for c in _RUN_COLUMNS)}
    FROM m JOIN runs r ON r.run_id = m.run_id
),
g AS MATERIALIZED (
    SELECT run_id, any_value(start_ms) AS start_ms, {_ANY}, count(*) AS paths
    FROM j GROUP BY run_id
),
p AS (SELECT * FROM j ORDER BY start_ms NULLS LAST, run_id, {{ids}}{{cut}}),
q AS (SELECT * FROM g ORDER BY start_ms NULLS LAST, run_id{{cut}})
SELECT 0 AS part, row_number() OVER (ORDER BY start_ms NULLS LAST, run_id, {{ids}}) AS n,
    run_id, {{lists}}, {_COLUMNS}, NULL::BIGINT AS paths
FROM p
UNION ALL
SELECT 1, row_number() OVER (ORDER BY start_ms NULLS LAST, run_id), run_id, NULL, NULL, NULL,
    {_COLUMNS}, paths
FROM q
UNION ALL
SELECT 2, (SELECT count(*) FROM j), NULL, NULL, NULL, NULL, {_NULLS}, (SELECT count(*) FROM g)
ORDER BY part, n
"""


def _match_sql(query: Query, columns: str, params: _Params) -> str:
    """The statement of one row a matching path, with these ``columns`` of the steps ``s0``..."""
    ctes = [
        f"s{i} AS ({_step_sql(step, i, query.edges[i - 1] if i else None, params)})"
        for i, step in enumerate(query.steps)
    ]
    joins = ["FROM s0"]
    for i, edge in enumerate(query.edges, start=1):
        if edge in (">", "~>"):
            joins.append(f"JOIN s{i} ON s{i}.parent = s{i - 1}.node")
        else:
            handoffs = f" AND c{i}.handoffs" if edge == "~>>" else ""
            joins.append(f"JOIN closure c{i} ON c{i}.ancestor = s{i - 1}.node{handoffs}")
            joins.append(f"JOIN s{i} ON s{i}.node = c{i}.descendant")
    return f"WITH {', '.join(ctes)}\nSELECT {columns}\n" + "\n".join(joins)


def _step_sql(step: Step, index: int, edge: str | None, params: _Params) -> str:
    """The nodes one step matches: node, parent, root, inv, agent, status."""
    where = ["i.root_run_id IS NOT NULL"]
    source = "invocations i"
    if step.circle:
        # The invocation its run's failure began at, when the run was refused for a circle.
        source += " JOIN runs r ON r.run_id = i.root_run_id"
        where += ["r.circle IS NOT NULL", "i.invocation_id = r.origin_invocation_id"]
        if step.agent is not None:
            circle = "coalesce(i.chain, string_split(r.circle, ' -> '))"
            where.append(f"list_contains({circle}, {params.add(step.agent)})")
    elif step.agent is not None:
        where.append(f"i.agent = {params.add(step.agent)}")
    if edge == "~>":
        where.append("i.kind = 'handoff'")
    where += [_pred_sql(p, _INV[p.field], params) for p in step.preds]
    sql = (
        "SELECT i.run_id AS node, i.parent_run_id AS parent, i.root_run_id AS root,"
        " i.invocation_id AS inv, i.agent, i.status"
        f" FROM {source} WHERE {' AND '.join(where)}"
    )
    if index == 0 and not step.circle and all(p.field in _ROOT for p in step.preds):
        sql += "\nUNION ALL\n" + _root_sql(step, params)
    return sql


def _root_sql(step: Step, params: _Params) -> str:
    """The root runs a first step matches (a root run is a node with no parent)."""
    where = ["true"]
    if step.agent is not None:
        where.append(f"r.agent = {params.add(step.agent)}")
    where += [_pred_sql(p, _ROOT[p.field], params) for p in step.preds]
    return (
        "SELECT r.run_id, NULL::VARCHAR, r.run_id, r.run_id, r.agent, r.status"
        f" FROM runs r WHERE {' AND '.join(where)}"
    )


def _pred_sql(pred: Pred, column: str, params: _Params) -> str:
    return f"{column} {_OPS[pred.op]} {params.add(pred.value)}"
