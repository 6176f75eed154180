"""Own time and token totals of the store's invocations, in SQL (as :mod:`tracekit.tree.measures`).

The derive step fills an invocation's own usage and edge source when it
rebuilds it from its records (:data:`MEASURE_COLUMNS`); then
:data:`MEASURE_SQL` recomputes ``own_ms`` and the subtree totals of every
invocation of the root runs in the temp table ``_affected`` (and of the
unrooted ones rebuilt, in ``_below``), since a subtree that arrives in a later
ingest changes every total above it.

* ``own_ms``: the duration less the length of the union of the children's
  intervals, each clipped to the parent's (gaps and islands over the children
  sorted by start: a new island where a start passes every end before it).
* totals: each invocation's own tokens are carried up its ancestors
  (``parent_invocation_id``, depth strictly decreasing, so a malformed circle
  ends) and summed per ancestor. Only invocations with tokens are carried.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BACKFILL_SQL",
    "EDGE_SOURCE",
    "MEASURE_COLUMNS",
    "MEASURE_SQL",
    "ROOT_USAGE_BACKFILL_SQL",
    "USAGE_JSON",
]

# The raw JSON is parsed only where it names the field (most records have none).
_USAGE = "CASE WHEN contains({raw}, '\"usage\"') THEN json_extract({raw}, '$.usage') END"

#: The measure columns of a rebuilt invocation, in table order: its own usage
#: from its exit's raw JSON (``ex.usage``), the rest filled by :data:`MEASURE_SQL`.
MEASURE_COLUMNS: Final = """
    en.edge_source AS edge_source,
    NULL::DOUBLE AS own_ms,
    TRY_CAST(json_extract(ex.usage, '$.inputTokens') AS BIGINT) AS input_tokens,
    TRY_CAST(json_extract(ex.usage, '$.outputTokens') AS BIGINT) AS output_tokens,
    NULL::BIGINT AS total_input_tokens,
    NULL::BIGINT AS total_output_tokens,
    TRY_CAST(json_extract(ex.usage, '$.models') AS VARCHAR[]) AS models"""

#: An exit's usage JSON, or NULL (``e`` is an ``events`` row).
USAGE_JSON: Final = "CASE WHEN e.type = 'exit' THEN " + _USAGE.format(raw="e.raw") + " END"

#: An enter's ``edge.source``, or NULL (``e`` is an ``events`` row).
EDGE_SOURCE: Final = (
    "CASE WHEN e.type = 'enter' AND contains(e.raw, '\"edge\"')"
    " THEN json_extract_string(e.raw, '$.edge.source') END"
)

MEASURE_SQL: Final = """
CREATE OR REPLACE TEMP TABLE _m AS
SELECT invocation_id, run_id, parent_run_id, parent_invocation_id, depth, root_run_id,
    coalesce(start_ms, end_ms - duration_ms) AS s, end_ms AS e, duration_ms AS d,
    input_tokens, output_tokens
FROM invocations
WHERE root_run_id IN (SELECT run_id FROM _affected)
   OR (root_run_id IS NULL AND run_id IN (SELECT run_id FROM _below));

CREATE OR REPLACE TEMP TABLE _own AS
WITH c AS (
    -- Each child clipped to its parent's interval; a running child reaches the parent's end.
    -- Invocation ids may repeat across runs: a call is its run and its id.
    SELECT p.run_id AS prun, p.invocation_id AS pid, greatest(k.s, p.s) AS a,
        least(coalesce(k.e, p.e), p.e) AS b
    FROM _m p JOIN _m k ON k.parent_invocation_id = p.invocation_id
        AND k.parent_run_id = p.run_id
    WHERE p.d IS NOT NULL AND p.s IS NOT NULL AND p.e IS NOT NULL AND k.s IS NOT NULL
), g AS (
    SELECT prun, pid, a, b, max(b) OVER (
        PARTITION BY prun, pid ORDER BY a, b ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
    ) AS before_end
    FROM c WHERE b > a
), isl AS (
    SELECT prun, pid, a, b, sum(CASE WHEN before_end IS NULL OR a > before_end THEN 1 ELSE 0 END)
        OVER (PARTITION BY prun, pid ORDER BY a, b ROWS UNBOUNDED PRECEDING) AS island
    FROM g
), cov AS (
    SELECT prun, pid, sum(len) AS covered
    FROM (SELECT prun, pid, max(b) - min(a) AS len FROM isl GROUP BY prun, pid, island)
    GROUP BY prun, pid
)
SELECT m.invocation_id, m.run_id,
    CASE WHEN m.d IS NOT NULL THEN greatest(greatest(m.d, 0) - coalesce(cov.covered, 0), 0) END
        AS own_ms
FROM _m m LEFT JOIN cov ON cov.pid = m.invocation_id AND cov.prun = m.run_id;

CREATE OR REPLACE TEMP TABLE _tot AS
WITH RECURSIVE up(run_id, invocation_id, parent_run, parent, depth, i, o) AS (
    SELECT run_id, invocation_id, parent_run_id, parent_invocation_id, depth,
        input_tokens, output_tokens
    FROM _m
    WHERE root_run_id IS NOT NULL AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL)
    UNION ALL
    SELECT p.run_id, p.invocation_id, p.parent_run_id, p.parent_invocation_id, p.depth, up.i, up.o
    FROM up JOIN _m p ON p.invocation_id = up.parent AND p.run_id = up.parent_run
        AND p.depth < up.depth AND p.root_run_id IS NOT NULL
)
SELECT run_id, invocation_id, sum(i) AS total_i, sum(o) AS total_o FROM up
GROUP BY run_id, invocation_id;

UPDATE invocations SET own_ms = x.own_ms,
    total_input_tokens = CASE WHEN invocations.root_run_id IS NULL
        THEN invocations.input_tokens ELSE x.total_i END,
    total_output_tokens = CASE WHEN invocations.root_run_id IS NULL
        THEN invocations.output_tokens ELSE x.total_o END
FROM (SELECT o.invocation_id, o.run_id, o.own_ms, t.total_i, t.total_o
      FROM _own o LEFT JOIN _tot t ON t.invocation_id = o.invocation_id
          AND t.run_id = o.run_id) x
WHERE invocations.invocation_id = x.invocation_id AND invocations.run_id = x.run_id
"""

#: Fills the measures of a store made before they existed (the v4 migration):
#: own usage and edge source from the records, then :data:`MEASURE_SQL` over
#: every run, the runs' sessions and tokens, and ``fleet_calls``.
BACKFILL_SQL: Final = f"""
UPDATE invocations SET edge_source = x.edge_source, input_tokens = x.input_tokens,
    output_tokens = x.output_tokens, models = x.models
FROM (
    SELECT run_id, invocation_id, any_value(edge_source) AS edge_source,
        any_value(TRY_CAST(json_extract(usage, '$.inputTokens') AS BIGINT)) AS input_tokens,
        any_value(TRY_CAST(json_extract(usage, '$.outputTokens') AS BIGINT)) AS output_tokens,
        any_value(TRY_CAST(json_extract(usage, '$.models') AS VARCHAR[])) AS models
    FROM (SELECT e.run_id, e.invocation_id, {EDGE_SOURCE} AS edge_source, {USAGE_JSON} AS usage
          FROM events e WHERE e.type IN ('enter', 'exit'))
    WHERE edge_source IS NOT NULL OR usage IS NOT NULL
    GROUP BY run_id, invocation_id
) x
WHERE invocations.run_id = x.run_id AND invocations.invocation_id = x.invocation_id;

CREATE OR REPLACE TEMP TABLE _affected AS SELECT run_id FROM runs;
CREATE OR REPLACE TEMP TABLE _below AS SELECT DISTINCT run_id FROM invocations;
{MEASURE_SQL};

UPDATE runs SET session_id = x.session_id FROM (
    SELECT run_id, any_value(json_extract_string(raw, '$.session')) AS session_id FROM events
    WHERE type = 'run.start' AND contains(raw, '"session"') GROUP BY run_id
) x WHERE runs.run_id = x.run_id;

UPDATE runs SET input_tokens = x.i, output_tokens = x.o FROM (
    SELECT root_run_id, sum(input_tokens) AS i, sum(output_tokens) AS o FROM invocations
    WHERE root_run_id IS NOT NULL GROUP BY root_run_id
) x WHERE runs.run_id = x.root_run_id;

UPDATE fleet_calls SET own_ms = i.own_ms, input_tokens = i.input_tokens,
    output_tokens = i.output_tokens
FROM invocations i WHERE fleet_calls.invocation_id = i.invocation_id
    AND fleet_calls.root_run_id = i.root_run_id;
"""

#: Fills ``runs.own_input_tokens`` and ``own_output_tokens`` (the root agent's
#: own usage, from its ``run.end``) in a store made before they existed (the v7
#: migration), and recomputes each run's total from its parts: the v4 backfill
#: summed the invocations only, so a store migrated through it left the root
#: agent's own usage out of its runs' totals.
ROOT_USAGE_BACKFILL_SQL: Final = """
UPDATE runs SET own_input_tokens = x.i, own_output_tokens = x.o FROM (
    SELECT run_id,
        any_value(TRY_CAST(json_extract(raw, '$.usage.inputTokens') AS BIGINT)) AS i,
        any_value(TRY_CAST(json_extract(raw, '$.usage.outputTokens') AS BIGINT)) AS o
    FROM events WHERE type = 'run.end' AND contains(raw, '"usage"') GROUP BY run_id
) x WHERE runs.run_id = x.run_id;

UPDATE runs SET
    input_tokens = CASE WHEN x.i IS NOT NULL OR runs.own_input_tokens IS NOT NULL
        THEN coalesce(x.i, 0) + coalesce(runs.own_input_tokens, 0) END,
    output_tokens = CASE WHEN x.o IS NOT NULL OR runs.own_output_tokens IS NOT NULL
        THEN coalesce(x.o, 0) + coalesce(runs.own_output_tokens, 0) END
FROM (
    SELECT r.run_id, sum(i.input_tokens) AS i, sum(i.output_tokens) AS o
    FROM runs r LEFT JOIN invocations i ON i.root_run_id = r.run_id GROUP BY r.run_id
) x WHERE runs.run_id = x.run_id;
"""
