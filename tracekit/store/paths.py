"""The ``closure`` table: every (ancestor, descendant) pair of the delegation trees.

``tracekit find`` answers ``a >> b`` (b anywhere below a) with two hash joins
through this table instead of a recursive walk per query. A node is a run: the
root run, or the child run an invocation started (``invocations.run_id``),
which is how :mod:`tracekit.store.derive` links a child to its parent. Each
row also says whether every edge between the two is a handoff (``a ~>> b``).

It is O(invocations x depth) rows; the simulated fleets are four deep, so a
200,000-run store holds about 2.3 rows an invocation (figures in BENCHMARKS.md).

Kept set-based by :func:`derive_paths`, called by ``derive`` once the
invocations below whatever an ingest touched (``_below``) are rebuilt: their
rows are dropped and made again by climbing from each rebuilt invocation to
the top of its rebuilt subtree, then on through the unchanged rows above it
(so a subtree that arrives in a later ingest, or a parent that arrives after
its children, gets every ancestor). Only rooted invocations
(``root_run_id`` not NULL) are in it: a cycle of run ids is never rooted.
"""

from __future__ import annotations

from typing import Final

import duckdb

__all__ = ["CLOSURE_BACKFILL", "derive_paths"]

# One row a rebuilt run: its parent, root and whether it was handed off to.
# A run id reused by two invocations is one node (as derive treats it).
_NODES: Final = """
CREATE OR REPLACE TEMP TABLE _closure_nodes AS
SELECT run_id, any_value(parent_run_id) AS parent, any_value(root_run_id) AS root_run_id,
    bool_and(coalesce(kind = 'handoff', false)) AS handoff
FROM invocations
WHERE {where} AND root_run_id IS NOT NULL AND parent_run_id IS NOT NULL
GROUP BY run_id
"""

# Climb from each node through the nodes being rebuilt; where the climb
# leaves them, the unchanged rows above carry it on to the root.
_CLIMB: Final = """
CREATE OR REPLACE TEMP TABLE _closure_up AS
WITH RECURSIVE up(root_run_id, ancestor, descendant, distance, handoffs) AS (
    SELECT root_run_id, parent, run_id, 1, handoff FROM _closure_nodes
    UNION ALL
    SELECT up.root_run_id, n.parent, up.descendant, up.distance + 1, up.handoffs AND n.handoff
    FROM up JOIN _closure_nodes n ON n.run_id = up.ancestor
)
SELECT * FROM up
"""

_INSERT: Final = """
INSERT INTO closure
SELECT root_run_id, ancestor, descendant, distance, handoffs FROM _closure_up
UNION ALL
SELECT u.root_run_id, c.ancestor, u.descendant, u.distance + c.distance, u.handoffs AND c.handoffs
FROM _closure_up u JOIN closure c ON c.descendant = u.ancestor
WHERE u.ancestor NOT IN (SELECT run_id FROM _closure_nodes)
"""

_DROP: Final = "DROP TABLE IF EXISTS _closure_up; DROP TABLE IF EXISTS _closure_nodes"

#: The migration's statements that fill ``closure`` from every invocation a store holds.
CLOSURE_BACKFILL: Final = (
    ";\n".join((_NODES.format(where="true").strip(), _CLIMB.strip(), _INSERT.strip(), _DROP)) + ";"
)


def derive_paths(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild the ``closure`` rows of the runs in the temp table ``_below``.

    Called by :func:`tracekit.store.derive.derive` inside its transaction,
    once ``invocations`` holds the rebuilt rows. A connection to a store not
    migrated to the closure yet (the migration backfills it) is left alone.
    """
    if not con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'closure' AND NOT temporary"
    ).fetchall()[0][0]:
        return
    con.execute("DELETE FROM closure WHERE descendant IN (SELECT run_id FROM _below)")
    con.execute(_NODES.format(where="run_id IN (SELECT run_id FROM _below)"))
    con.execute(_CLIMB)
    con.execute(_INSERT)
    con.execute(_DROP)
