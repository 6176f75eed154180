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

__all__ = ["compile_query"]

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
    steps = range(len(query.steps))
    lists = ", ".join(
        f"[{', '.join(f's{i}.{column}' for i in steps)}] AS {name}"
        for column, name in (("inv", "invocation_ids"), ("agent", "agents"), ("status", "statuses"))
    )
    sql = f"WITH {', '.join(ctes)}\nSELECT s0.root AS run_id, {lists}\n" + "\n".join(joins)
    return sql, params.values


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
