"""Deriving invocations, steps and runs from newly ingested events, in SQL.

Only what the new events touch is rebuilt: the invocations they name, every
invocation below those (a parent that arrives late re-roots its subtree), and
the root runs of both, old and new. A rebuilt run has ``outcome`` and
``classified_at`` NULL, so the fleet classification looks at it again.
"""

from __future__ import annotations

from typing import Final

import duckdb

from tracekit._util.sql import run_script
from tracekit.store.measures import EDGE_SOURCE, MEASURE_COLUMNS, MEASURE_SQL, USAGE_JSON
from tracekit.store.paths import derive_paths

__all__ = ["derive"]

_TS = "make_timestamp(CAST({} * 1000 AS BIGINT))"

# Invocations named by this ingest's enter/exit records, rebuilt from all
# their events (an exit may arrive ingests after its enter).
_TOUCHED: Final = """
CREATE OR REPLACE TEMP TABLE _touched AS
SELECT DISTINCT run_id, invocation_id FROM events
WHERE ingest_id >= $since AND type IN ('enter', 'exit');

CREATE OR REPLACE TEMP TABLE _old_roots AS
SELECT DISTINCT i.root_run_id AS run_id FROM invocations i SEMI JOIN _touched t
    ON i.run_id = t.run_id AND i.invocation_id = t.invocation_id
WHERE i.root_run_id IS NOT NULL;
"""

# The touched invocations rebuilt from all their events (an exit may arrive
# ingests after its enter); root, parent and depth are filled below.
_REBUILD: Final = f"""
CREATE OR REPLACE TEMP TABLE _rebuilt AS
WITH ev AS (
    -- Named columns, not e.*: the raw JSON is read only for an exit's error.
    SELECT e.type, e.invocation_id, e.run_id, e.parent_run_id, e.agent, e.node, e.kind,
        e.service, e.trace_id, e.ts_ms, e.duration_ms, e.status, e.ok, e.error_code,
        CASE WHEN e.type = 'exit' AND e.error_code IS NOT NULL
            THEN json_extract(e.raw, '$.error') END AS err,
        {USAGE_JSON} AS usage, {EDGE_SOURCE} AS edge_source
    FROM events e SEMI JOIN _touched t
        ON e.run_id = t.run_id AND e.invocation_id = t.invocation_id
    WHERE e.type IN ('enter', 'exit')
), en AS (SELECT * FROM ev WHERE type = 'enter'),
ex AS (SELECT * FROM ev WHERE type = 'exit')
SELECT
    coalesce(en.invocation_id, ex.invocation_id) AS invocation_id,
    coalesce(en.run_id, ex.run_id) AS run_id,
    coalesce(en.parent_run_id, ex.parent_run_id) AS parent_run_id,
    NULL::VARCHAR AS root_run_id,
    NULL::VARCHAR AS parent_invocation_id,
    coalesce(en.agent, ex.agent) AS agent,
    coalesce(en.node, ex.node) AS node,
    coalesce(en.kind, 'delegate') AS kind,
    coalesce(en.service, ex.service) AS service,
    coalesce(en.trace_id, ex.trace_id) AS trace_id,
    en.ts_ms AS start_ms,
    ex.ts_ms AS end_ms,
    {_TS.format("en.ts_ms")} AS start_at,
    {_TS.format("ex.ts_ms")} AS end_at,
    coalesce(ex.duration_ms, ex.ts_ms - en.ts_ms) AS duration_ms,
    coalesce(ex.status, 'running') AS status,
    ex.ok AS ok,
    ex.error_code AS error_code,
    json_extract_string(ex.err, '$.message') AS error_message,
    CAST(json_extract(ex.err, '$.chain') AS VARCHAR[]) AS chain,
    ex.err AS error,
    NULL::INTEGER AS depth,
    en.invocation_id IS NOT NULL AS has_enter,
    ex.invocation_id IS NOT NULL AS has_exit,
    NULL::VARCHAR AS failure_role,
    {MEASURE_COLUMNS}
FROM en FULL OUTER JOIN ex ON en.run_id = ex.run_id AND en.invocation_id = ex.invocation_id;

CREATE OR REPLACE TEMP VIEW _all AS
SELECT * FROM invocations i ANTI JOIN _touched t
    ON i.run_id = t.run_id AND i.invocation_id = t.invocation_id
UNION ALL SELECT * FROM _rebuilt;
"""

# The rebuilt invocations and all below them (a parent that arrives late
# re-roots its subtree), keyed by their run: a child run belongs to the
# invocation that started it (the lowest invocation id, if a run id was reused).
_SUBTREE: Final = """
CREATE OR REPLACE TEMP TABLE _below AS
WITH RECURSIVE d(run_id) AS (
    SELECT run_id FROM _rebuilt
    UNION
    SELECT c.run_id FROM _all c JOIN d ON c.parent_run_id = d.run_id
)
SELECT DISTINCT run_id FROM d;

INSERT INTO _old_roots
SELECT DISTINCT root_run_id FROM invocations
WHERE run_id IN (SELECT run_id FROM _below) AND root_run_id IS NOT NULL;

CREATE OR REPLACE TEMP TABLE _sub AS
WITH s AS (SELECT * FROM _all WHERE run_id IN (SELECT run_id FROM _below)),
by_run AS (
    SELECT run_id, min(invocation_id) AS invocation_id FROM _all
    WHERE run_id IN (SELECT parent_run_id FROM s) GROUP BY run_id
)
SELECT s.* REPLACE (by_run.invocation_id AS parent_invocation_id)
FROM s LEFT JOIN by_run ON by_run.run_id = s.parent_run_id;
"""

# Depth and root: from the top of each rebuilt subtree downwards, run by run.
_ROOTS: Final = """
CREATE OR REPLACE TEMP TABLE _walk AS
WITH RECURSIVE runs1 AS (
    -- A run with two different parents is malformed: it is left unrooted,
    -- which also keeps a cycle of run ids from being walked forever.
    SELECT run_id, any_value(parent_run_id) AS parent_run_id,
        any_value(parent_invocation_id) AS parent_invocation_id
    FROM _sub GROUP BY run_id HAVING count(DISTINCT parent_run_id) <= 1
), tops AS (
    SELECT * FROM runs1
    WHERE parent_run_id IS NULL OR parent_run_id NOT IN (SELECT run_id FROM _below)
), w(run_id, root_run_id, depth) AS (
    SELECT t.run_id,
        CASE WHEN p.run_id IS NOT NULL THEN p.root_run_id
             ELSE coalesce(t.parent_run_id, t.run_id) END,
        CASE WHEN p.run_id IS NOT NULL THEN p.depth + 1
             WHEN t.parent_run_id IS NULL THEN 0 ELSE 1 END
    FROM tops t LEFT JOIN invocations p ON p.invocation_id = t.parent_invocation_id
        AND p.run_id = t.parent_run_id
    UNION ALL
    SELECT c.run_id, w.root_run_id, w.depth + 1
    FROM runs1 c JOIN w ON c.parent_run_id = w.run_id
)
SELECT * FROM w;

DELETE FROM invocations
WHERE run_id IN (SELECT run_id FROM _below);

INSERT INTO invocations BY NAME
SELECT s.* REPLACE (w.root_run_id AS root_run_id, w.depth AS depth, NULL AS failure_role)
FROM _sub s LEFT JOIN _walk w ON w.run_id = s.run_id;
"""

# A store older than v4 (written by an older tracekit, before it was
# opened and migrated) has steps without call and error columns.
_STEPS_V1: Final = """
INSERT INTO steps
SELECT run_id, node, string_split(node, '/')[-1], ts_ms, seq, ok, duration_ms, source, line
FROM events WHERE ingest_id >= $since AND type = 'node';
"""

# ``call`` and the error's message are read from the raw JSON only where the
# record can have them: a ``"call"`` key, an error code.
_STEPS: Final = """
INSERT INTO steps BY NAME
SELECT run_id, node AS step_id, string_split(node, '/')[-1] AS name, ts_ms, seq, ok,
    duration_ms, source, line,
    CASE WHEN contains(raw, '"call"') THEN json_extract_string(raw, '$.call') END AS call,
    error_code,
    CASE WHEN error_code IS NOT NULL
        THEN json_extract_string(raw, '$.error.message') END AS error_message
FROM events WHERE ingest_id >= $since AND type = 'node';
"""

# Every root run whose tree changed: old and new roots of rebuilt
# invocations, runs named by new run.start/run.end/node records and the
# roots above new nodes.
_AFFECTED: Final = """
CREATE OR REPLACE TEMP TABLE _affected AS
SELECT run_id FROM _old_roots
UNION SELECT root_run_id FROM invocations
      WHERE run_id IN (SELECT run_id FROM _below) AND root_run_id IS NOT NULL
UNION SELECT run_id FROM events
      WHERE ingest_id >= $since AND type IN ('run.start', 'run.end', 'node')
UNION SELECT i.root_run_id FROM invocations i
      JOIN (SELECT DISTINCT run_id FROM events WHERE ingest_id >= $since AND type = 'node') n
      ON n.run_id = i.run_id WHERE i.root_run_id IS NOT NULL;

DELETE FROM runs WHERE run_id IN (SELECT run_id FROM _affected);
UPDATE invocations SET failure_role = NULL
WHERE failure_role IS NOT NULL AND root_run_id IN (SELECT run_id FROM _affected);
"""

_RUNS: Final = f"""
INSERT INTO runs (
    run_id, service, agent, trace_id, start_ms, end_ms, start_at, end_at, duration_ms,
    ok, status, failure, error_code, error_message, has_start, has_end,
    invocations, failed_invocations, max_depth, session_id, input_tokens, output_tokens,
    own_input_tokens, own_output_tokens)
WITH a AS (SELECT run_id FROM _affected),
ev AS MATERIALIZED (
    -- The raw JSON is read out here, not carried: only run.end needs two fields of it.
    SELECT type, run_id, ts_ms, agent, service, trace_id, ok, duration_ms, error_code,
        CASE WHEN type = 'run.end' THEN json_extract_string(raw, '$.failure') END AS failure,
        CASE WHEN type = 'run.end' AND error_code IS NOT NULL
            THEN json_extract_string(raw, '$.error.message') END AS error_message,
        CASE WHEN type = 'run.start' AND contains(raw, '"session"')
            THEN json_extract_string(raw, '$.session') END AS session_id,
        -- The root agent's own usage rides on run.end (it has no exit record).
        CASE WHEN type = 'run.end' AND contains(raw, '"usage"')
            THEN TRY_CAST(json_extract(raw, '$.usage.inputTokens') AS BIGINT) END AS own_in,
        CASE WHEN type = 'run.end' AND contains(raw, '"usage"')
            THEN TRY_CAST(json_extract(raw, '$.usage.outputTokens') AS BIGINT) END AS own_out
    FROM events
    WHERE type IN ('run.start', 'run.end') AND run_id IN (SELECT run_id FROM a)
),
s AS (SELECT * FROM ev WHERE type = 'run.start'),
e AS (SELECT * FROM ev WHERE type = 'run.end'),
n AS (
    -- Nodes aggregated straight from the scan, not materialized with the run
    -- records: they are most of the rows (INSERT INTO runs at 5M: 3.6 s -> 2.1 s).
    SELECT run_id, min(ts_ms) AS first_ms, max(ts_ms) AS last_ms FROM events
    WHERE type = 'node' AND run_id IN (SELECT run_id FROM a) GROUP BY run_id
),
i AS (
    SELECT root_run_id AS run_id, count(*) AS invocations,
        count(*) FILTER (WHERE ok = false) AS failed,
        max(depth) AS max_depth, min(start_ms) AS first_ms,
        greatest(max(end_ms), max(start_ms)) AS last_ms,
        arg_min(service, start_ms) AS service, arg_min(trace_id, start_ms) AS trace_id,
        sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
    FROM invocations WHERE root_run_id IN (SELECT run_id FROM a) GROUP BY root_run_id
),
roots AS (
    SELECT run_id FROM a
    WHERE run_id IN (SELECT run_id FROM s) OR run_id IN (SELECT run_id FROM e)
       OR run_id IN (SELECT run_id FROM i)
       OR (run_id IN (SELECT run_id FROM n)
           AND run_id NOT IN (SELECT run_id FROM invocations WHERE run_id IS NOT NULL))
),
t AS (
    SELECT r.run_id,
        coalesce(s.service, e.service, i.service) AS service,
        s.agent,
        coalesce(s.trace_id, e.trace_id, i.trace_id) AS trace_id,
        coalesce(s.ts_ms, least(i.first_ms, n.first_ms)) AS start_ms,
        coalesce(e.ts_ms, greatest(i.last_ms, n.last_ms)) AS end_ms,
        e.duration_ms AS end_duration, e.ok, e.failure, e.error_code, e.error_message,
        s.run_id IS NOT NULL AS has_start, e.run_id IS NOT NULL AS has_end,
        coalesce(i.invocations, 0) AS invocations, coalesce(i.failed, 0) AS failed,
        coalesce(i.max_depth, 0) AS max_depth,
        s.session_id,
        CASE WHEN i.input_tokens IS NOT NULL OR e.own_in IS NOT NULL
            THEN coalesce(i.input_tokens, 0) + coalesce(e.own_in, 0) END AS input_tokens,
        CASE WHEN i.output_tokens IS NOT NULL OR e.own_out IS NOT NULL
            THEN coalesce(i.output_tokens, 0) + coalesce(e.own_out, 0) END AS output_tokens,
        e.own_in, e.own_out
    FROM roots r
    LEFT JOIN s ON s.run_id = r.run_id
    LEFT JOIN e ON e.run_id = r.run_id
    LEFT JOIN n ON n.run_id = r.run_id
    LEFT JOIN i ON i.run_id = r.run_id
)
SELECT run_id, service, agent, trace_id, start_ms, end_ms,
    {_TS.format("start_ms")}, {_TS.format("end_ms")},
    coalesce(end_duration, end_ms - start_ms),
    ok,
    CASE WHEN NOT has_end THEN 'running' WHEN ok THEN 'ok' ELSE 'error' END,
    failure, error_code, error_message, has_start, has_end, invocations, failed, max_depth,
    session_id, input_tokens, output_tokens, own_in, own_out
FROM t
"""


def derive(con: duckdb.DuckDBPyConnection, since: int) -> int:
    """Rebuild what the events of ingests ``>= since`` touch; return runs touched."""
    params = {"since": since}
    steps = _STEPS if _has_call(con) else _STEPS_V1
    for script in (_TOUCHED, _REBUILD, _SUBTREE, _ROOTS, steps, _AFFECTED, MEASURE_SQL, _RUNS):
        run_script(con, script, params)
    derive_paths(con)  # the closure of the rebuilt subtrees (tracekit find)
    row = con.execute("SELECT count(*) FROM _affected").fetchall()[0]
    return int(row[0]) if row else 0


def _has_call(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store's steps have the v4 columns."""
    row = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'steps' AND column_name = 'call'"
    ).fetchone()
    return bool(row and row[0])
