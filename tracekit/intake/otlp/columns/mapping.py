"""The common shapes of OTLP traces mapped to v1 records set-based, over the spans table.

A trace is taken here (``_otlp_taken``) only when every span of it is of a
shape this SQL maps exactly as the per-span converter does: an
``invoke_agent`` root; agents called through an ``execute_tool`` span that
names the delegating node; tool steps and plain steps right under an agent;
every span ended and not failed, with no events, no links, no attribute the
mapping reads beyond those, and names the converter itself reads as assumed
(:mod:`~tracekit.intake.otlp.columns.probe`). Every other trace is left to the
per-span converter, whole. Its spans must also lie within 64 lines, so that
the converter would have mapped it once (its settle), not in parts.

The records come out as v1 JSON text (``_otlp_records``: ``line``, ``trace``,
its order in ``event_sort_key``'s terms, ``text``), byte for byte what
``encode_event`` writes for the converter's records; nothing here touches a
store table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import duckdb

from tracekit.intake.otlp.columns.probe import delegation, marker, reads_target, verdict

__all__ = ["SETTLE", "map_spans"]

#: Lines within which a trace's spans must lie (the converter's settle, in documents).
SETTLE: Final = 64

_ROLES_SQL = """
CREATE OR REPLACE TEMP TABLE _otlp_roles AS
SELECT s.* EXCLUDE (raw, pos, ri),
    CASE
        WHEN op = 'invoke_agent' AND agent <> '' AND tool IS NULL THEN 'agent'
        WHEN op = 'execute_tool' AND tool <> '' AND agent IS NULL AND conversation IS NULL
            AND tokens_in IS NULL AND tokens_out IS NULL AND model IS NULL THEN 'tool'
        WHEN op IS NULL AND agent IS NULL AND tool IS NULL AND conversation IS NULL
            AND tokens_in IS NULL AND tokens_out IS NULL AND model IS NULL THEN 'step'
    END AS role
FROM _otlp_spans s
"""

_LABELS_SQL = """
SELECT DISTINCT role, name, CASE role WHEN 'agent' THEN agent WHEN 'tool' THEN tool ELSE '' END
FROM _otlp_roles WHERE role IS NOT NULL
"""

_PAIRS_SQL = """
SELECT DISTINCT p.name, p.tool, s.name, s.agent
FROM _otlp_roles s JOIN _otlp_roles p ON p.trace = s.trace AND p.id = s.parent
WHERE s.role = 'agent' AND p.role = 'tool'
"""

_CONTROL = r"regexp_matches({0}, '[\x00-\x1f]')"

_TAKEN_SQL = f"""
CREATE OR REPLACE TEMP TABLE _otlp_kids AS
SELECT trace, parent AS id, count(*) AS children, min(role) AS child_role, min(agent) AS callee
FROM _otlp_roles WHERE parent <> '' GROUP BY trace, parent;

CREATE OR REPLACE TEMP TABLE _otlp_tree AS
SELECT s.trace, s.id, s.role, s.line, s.parent, s.conversation,
    p.role AS parent_role, g.role AS grand_role,
    coalesce(k.children, 0) AS children, k.child_role, coalesce(pk.children, 0) AS siblings,
    d.kind AS kind, d.source AS source,
    s.role IS NOT NULL AND coalesce(v.ok, false)
        AND (s.role <> 'agent' OR s.parent = '' OR d.kind IS NOT NULL)
        -- a handoff marker serves edges across its trace: only the one that calls whom it names
        AND (NOT coalesce(v.marks, false) OR coalesce(v.marked = k.callee, false))
        AND NOT (v.target AND s.arguments > 0)
        AND s.typed AND s.others = 0 AND s.events = 0
        AND len(s.link_traces) = 0 AND s.end_ns IS NOT NULL AND s.status_code IN (0, 1)
        -- control characters are escaped otherwise by DuckDB's to_json (\u001f, not \u001f)
        AND NOT {_CONTROL.format("concat(s.name, s.service, s.agent, s.tool, s.conversation, s.model)")}
            AS plain
FROM _otlp_roles s
LEFT JOIN _otlp_verdicts v ON v.role = s.role AND v.name = s.name
    AND v.label = CASE s.role WHEN 'agent' THEN s.agent WHEN 'tool' THEN s.tool ELSE '' END
LEFT JOIN _otlp_kids k ON k.trace = s.trace AND k.id = s.id
LEFT JOIN _otlp_roles p ON p.trace = s.trace AND p.id = s.parent AND s.parent <> ''
LEFT JOIN _otlp_kids pk ON pk.trace = p.trace AND pk.id = p.id
LEFT JOIN _otlp_roles g ON g.trace = p.trace AND g.id = p.parent AND p.parent <> ''
LEFT JOIN _otlp_delegations d ON s.role = 'agent' AND p.role = 'tool'
    AND d.tool_name = p.name AND d.tool = p.tool AND d.agent_name = s.name AND d.agent = s.agent;

CREATE OR REPLACE TEMP TABLE _otlp_taken AS
SELECT trace FROM _otlp_tree
WHERE trace NOT IN (SELECT unnest(link_traces) FROM _otlp_spans)
GROUP BY trace
HAVING bool_and(plain)
    AND count(*) FILTER (WHERE parent = '') = 1
    AND bool_and(parent = '' AND role = 'agent'
        OR role = 'agent' AND parent_role = 'tool' AND grand_role = 'agent' AND siblings = 1
        OR role = 'tool' AND parent_role = 'agent'
            AND (children = 0 OR children = 1 AND child_role = 'agent')
        OR role = 'step' AND parent_role = 'agent' AND children = 0)
    AND count(DISTINCT id) = count(*)
    AND max(line) - min(line) < {SETTLE}
    AND count(DISTINCT conversation) <= 1
"""

# Nanoseconds to milliseconds as Python's int / int rounds them: the whole
# milliseconds are exact in a double, and adding the fraction rounds once.
_MS = "(({0} // 1000000)::DOUBLE + ({0} % 1000000)::DOUBLE / 1000000.0)"
_DURATION = "((s.end_ns - s.start_ns)::DOUBLE / 1000000.0)"
_USAGE = """CASE WHEN tokens_in IS NOT NULL OR tokens_out IS NOT NULL OR coalesce(model, '') <> ''
    THEN ',"usage":{' || concat_ws(',',
        CASE WHEN tokens_in IS NOT NULL THEN '"inputTokens":' || tokens_in END,
        CASE WHEN tokens_out IS NOT NULL THEN '"outputTokens":' || tokens_out END,
        CASE WHEN coalesce(model, '') <> '' THEN '"models":[' || to_json(model) || ']' END) || '}'
    ELSE '' END"""
_HEAD = """'{{"type":"{0}","ts":' || to_json({1})
    || CASE WHEN service IS NOT NULL THEN ',"service":' || to_json(service) ELSE '' END
    || ',"traceId":' || to_json(trace)"""

_RECORDS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _otlp_mapped AS
SELECT s.*, {_MS.format("s.start_ns")} AS start_ms, {_MS.format("s.end_ns")} AS end_ms,
    {_DURATION} AS duration, p.parent AS caller, p.tool AS node, t.kind, t.source, t.children,
    max(s.conversation) OVER (PARTITION BY s.trace) AS session
FROM _otlp_roles s
JOIN _otlp_taken USING (trace)
JOIN _otlp_tree t ON t.trace = s.trace AND t.id = s.id
LEFT JOIN _otlp_roles p ON p.trace = s.trace AND p.id = s.parent AND s.parent <> '';

CREATE OR REPLACE TEMP TABLE _otlp_records AS
SELECT line, trace, ts, rank, k3, k4, text FROM (
    SELECT line, trace, start_ms AS ts, 0 AS rank, id AS k3, '' AS k4,
        {_HEAD.format("run.start", "start_ms")} || ',"runId":' || to_json(id)
        || ',"agent":' || to_json(agent)
        || CASE WHEN session IS NOT NULL THEN ',"session":' || to_json(session) ELSE '' END
        || '}}' AS text
    FROM _otlp_mapped WHERE role = 'agent' AND parent = ''
    UNION ALL
    SELECT line, trace, end_ms, 4, id, '',
        {_HEAD.format("run.end", "end_ms")} || ',"runId":' || to_json(id)
        || ',"ok":true,"durationMs":' || to_json(duration) || {_USAGE} || '}}'
    FROM _otlp_mapped WHERE role = 'agent' AND parent = ''
    UNION ALL
    SELECT line, trace, start_ms, 1, id, '',
        {_HEAD.format("enter", "start_ms")} || ',"invocationId":' || to_json(id)
        || ',"runId":' || to_json(id) || ',"parentRunId":' || to_json(caller)
        || ',"agent":' || to_json(agent) || ',"node":' || to_json(node)
        || CASE WHEN kind <> 'delegate' THEN ',"kind":' || to_json(kind) ELSE '' END
        || CASE WHEN source <> '' THEN ',"edge":{{"source":' || to_json(source) || '}}' ELSE '' END
        || '}}'
    FROM _otlp_mapped WHERE role = 'agent' AND parent <> ''
    UNION ALL
    SELECT line, trace, end_ms, 3, id, '',
        {_HEAD.format("exit", "end_ms")} || ',"invocationId":' || to_json(id)
        || ',"runId":' || to_json(id) || ',"parentRunId":' || to_json(caller)
        || ',"agent":' || to_json(agent) || ',"node":' || to_json(node)
        || ',"ok":true,"durationMs":' || to_json(duration) || ',"status":"ok"' || {_USAGE} || '}}'
    FROM _otlp_mapped WHERE role = 'agent' AND parent <> ''
    UNION ALL
    SELECT line, trace, start_ms, 2, parent, coalesce(tool, name),
        {_HEAD.format("node", "start_ms")} || ',"runId":' || to_json(parent)
        || ',"id":' || to_json(coalesce(tool, name))
        || ',"ok":true,"durationMs":' || to_json(duration)
        || CASE WHEN role = 'tool' THEN ',"call":"tool"' ELSE '' END || '}}'
    FROM _otlp_mapped
    WHERE role = 'step' OR role = 'tool' AND children = 0
)
"""

_COUNTS_SQL = """
SELECT count(*) FILTER (WHERE role = 'agent'), count(*) FILTER (WHERE role <> 'agent')
FROM _otlp_roles JOIN _otlp_taken USING (trace)
"""


def map_spans(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """Map the traces of ``_otlp_spans`` that have a common shape into ``_otlp_records``.

    The traces taken are left in ``_otlp_taken``; the rest is the caller's.

    Returns:
        How many of the spans taken are agents, and how many steps (tool and
        plain steps, and the tool spans that name a delegating node).
    """
    _run(con, _ROLES_SQL)
    labels = con.execute(_LABELS_SQL).fetchall()
    rows = [
        (
            role,
            name,
            label,
            verdict(role, name, label),
            reads_target(role, name, label),
            *marker(role, name, label),
        )
        for role, name, label in labels
    ]
    _fill(con, _VERDICTS, rows)
    pairs = con.execute(_PAIRS_SQL).fetchall()
    found = [(*pair, *answer) for pair in pairs if (answer := delegation(*pair)) is not None]
    _fill(con, _DELEGATIONS, found)
    _run(con, _TAKEN_SQL)
    _run(con, _RECORDS_SQL)
    agents, steps = con.execute(_COUNTS_SQL).fetchall()[0]
    for table_name in (
        "_otlp_mapped",
        "_otlp_tree",
        "_otlp_kids",
        "_otlp_verdicts",
        "_otlp_delegations",
    ):
        con.execute(f"DROP TABLE IF EXISTS {table_name}")
    return int(agents or 0), int(steps or 0)


_VERDICTS: Final = (
    "_otlp_verdicts (role VARCHAR, name VARCHAR, label VARCHAR, ok BOOLEAN, target BOOLEAN,"
    " marks BOOLEAN, marked VARCHAR)"
)
_DELEGATIONS: Final = (
    "_otlp_delegations (tool_name VARCHAR, tool VARCHAR, agent_name VARCHAR, agent VARCHAR,"
    " kind VARCHAR, source VARCHAR)"
)


def _fill(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[tuple[object, ...]]) -> None:
    """A small temp table of the probe's answers (a few hundred rows: one a distinct name)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table}")
    if rows:
        row = "(" + ", ".join("?" * len(rows[0])) + ")"
        values = ", ".join([row] * len(rows))
        flat = [value for found in rows for value in found]
        con.execute(f"INSERT INTO {table.split()[0]} VALUES {values}", flat)


def _run(con: duckdb.DuckDBPyConnection, script: str) -> None:
    for statement in script.split(";\n"):
        if statement.strip():
            con.execute(statement)
