"""The store's tables, kept as numbered migrations.

``docs/store.md`` documents every column. A store records the version it is
at in ``schema_version``; opening an older store applies the migrations it
lacks, in order, in one transaction each. Never edit a released migration:
add the next one.

Times are kept twice: ``*_ms`` (DOUBLE, milliseconds since the epoch, exactly
as in the trace) for arithmetic and ordering, and ``*_at`` (TIMESTAMP, UTC)
for windows such as ``--since 2h``.
"""

from __future__ import annotations

from typing import Final

from tracekit.store.measures import BACKFILL_SQL, ROOT_USAGE_BACKFILL_SQL
from tracekit.store.paths import CLOSURE_BACKFILL

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_V1: Final = """
CREATE TABLE schema_version (
    version     INTEGER NOT NULL,
    applied_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE SEQUENCE ingest_id_seq START 1;

-- One row for each ingest of one source (a file, or a new tail of it).
CREATE TABLE ingest_log (
    ingest_id     BIGINT PRIMARY KEY,
    source        VARCHAR NOT NULL,   -- path as given, or '-' for stdin
    path          VARCHAR,            -- absolute path, the identity of a file across ingests; NULL for stdin
    format        VARCHAR NOT NULL,   -- 'tracekit' | 'otlp'
    size          BIGINT,             -- bytes of the source when read
    hash          VARCHAR,            -- fingerprint of bytes [0, end_offset): sha256 of their first and last 64 KiB and length
    start_offset  BIGINT NOT NULL DEFAULT 0,  -- byte offset this ingest began at
    end_offset    BIGINT,                     -- first byte not read (an incomplete last line is not read)
    first_line    BIGINT NOT NULL DEFAULT 1,  -- line number of start_offset
    end_line      BIGINT,                     -- line number of end_offset (the next line to read)
    lines_read    BIGINT NOT NULL DEFAULT 0,
    accepted      BIGINT NOT NULL DEFAULT 0,
    rejected      BIGINT NOT NULL DEFAULT 0,
    duplicates    BIGINT NOT NULL DEFAULT 0,
    started_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP
);

-- Every accepted record, as read. OTLP spans are stored as the v1 records
-- they map to. ``raw`` keeps the record's JSON with unknown fields intact.
-- No index: keys are kept unique by the ingest (an ART index would cost
-- memory in proportion to the store and slow every bulk load).
CREATE TABLE events (
    event_key       VARCHAR NOT NULL,     -- identity used to count duplicates once (unique)
    key_hash        UBIGINT NOT NULL,     -- hash(event_key): the fast first test for a duplicate
    ingest_id       BIGINT NOT NULL,
    source          VARCHAR NOT NULL,
    line            BIGINT NOT NULL,
    item            INTEGER NOT NULL DEFAULT 0,  -- position among the records of one line (OTLP), else 0
    type            VARCHAR NOT NULL,     -- enter | exit | node | run.start | run.end
    ts_ms           DOUBLE NOT NULL,
    seq             BIGINT,
    run_id          VARCHAR,
    parent_run_id   VARCHAR,
    invocation_id   VARCHAR,
    agent           VARCHAR,
    node            VARCHAR,
    kind            VARCHAR,
    status          VARCHAR,
    ok              BOOLEAN,
    duration_ms     DOUBLE,
    error_code      VARCHAR,
    service         VARCHAR,
    trace_id        VARCHAR,
    raw             VARCHAR NOT NULL
);

-- An agent invocation: its enter and exit paired (either may be missing).
CREATE TABLE invocations (
    invocation_id         VARCHAR NOT NULL,  -- unique
    run_id                VARCHAR NOT NULL,  -- the child run
    parent_run_id         VARCHAR,           -- the caller's run
    root_run_id           VARCHAR,           -- the root run of the whole tree
    parent_invocation_id  VARCHAR,           -- the invocation whose run_id is parent_run_id
    agent                 VARCHAR NOT NULL,
    node                  VARCHAR,           -- the caller's node that delegated
    kind                  VARCHAR NOT NULL DEFAULT 'delegate',
    service               VARCHAR,
    trace_id              VARCHAR,
    start_ms              DOUBLE,
    end_ms                DOUBLE,
    start_at              TIMESTAMP,
    end_at                TIMESTAMP,
    duration_ms           DOUBLE,
    status                VARCHAR NOT NULL,  -- ok | error | refused | cancelled | pending | running
    ok                    BOOLEAN,
    error_code            VARCHAR,
    error_message         VARCHAR,
    chain                 VARCHAR[],         -- the recursion circle, when refused for it
    error                 JSON,              -- the whole error, causes nested
    depth                 INTEGER,           -- 1 for an invocation made by the root run
    has_enter             BOOLEAN NOT NULL,
    has_exit              BOOLEAN NOT NULL,
    -- Filled by the fleet classification (tracekit.failures):
    failure_role          VARCHAR            -- 'origin' | 'wrapped' | NULL when it did not fail
);

-- A step of a run (a ``node`` record).
CREATE TABLE steps (
    run_id       VARCHAR NOT NULL,
    step_id      VARCHAR NOT NULL,   -- as written, may be a path
    name         VARCHAR NOT NULL,   -- the last part of step_id
    ts_ms        DOUBLE NOT NULL,
    seq          BIGINT,
    ok           BOOLEAN,
    duration_ms  DOUBLE,
    source       VARCHAR NOT NULL,
    line         BIGINT NOT NULL
);

-- One row for each root run.
CREATE TABLE runs (
    run_id                VARCHAR NOT NULL,  -- unique
    service               VARCHAR,
    agent                 VARCHAR,
    trace_id              VARCHAR,
    start_ms              DOUBLE,
    end_ms                DOUBLE,
    start_at              TIMESTAMP,
    end_at                TIMESTAMP,
    duration_ms           DOUBLE,
    ok                    BOOLEAN,           -- from run.end; NULL when no end was seen
    status                VARCHAR NOT NULL,  -- ok | error | running (no run.end)
    failure               VARCHAR,           -- run.end's 'delegation' | 'agent'
    error_code            VARCHAR,
    error_message         VARCHAR,
    has_start             BOOLEAN NOT NULL,  -- false: the root was inferred
    has_end               BOOLEAN NOT NULL,
    invocations           INTEGER NOT NULL DEFAULT 0,
    failed_invocations    INTEGER NOT NULL DEFAULT 0,
    max_depth             INTEGER NOT NULL DEFAULT 0,
    -- Filled by the fleet classification (tracekit.failures):
    outcome               VARCHAR,  -- ok | degraded | failed:recursion | failed:child | failed:refused | cancelled | incomplete
    circle                VARCHAR,  -- canonical recursion circle, 'a -> b -> a'
    origin_invocation_id  VARCHAR,  -- where the failure began
    origin_agent          VARCHAR,
    origin_code           VARCHAR,
    classified_at         TIMESTAMP
);

-- Lines that could not be read; they never stop the rest.
CREATE TABLE rejects (
    ingest_id  BIGINT NOT NULL,
    source     VARCHAR NOT NULL,
    line       BIGINT NOT NULL,
    raw        VARCHAR NOT NULL,
    reason     VARCHAR NOT NULL
);
"""

# v2: ``events.raw`` compressed with zstd. DuckDB's default string compression
# (FSST or dictionary, chosen by analysing each segment) cost a third of an
# ingest's time on the raw JSON lines, at the write and at the checkpoint;
# zstd is faster to write and the file is smaller. The table is rebuilt with
# its rows: DuckDB cannot change a column's compression in place.
_V2: Final = """
ALTER TABLE events RENAME TO _events_v1;

CREATE TABLE events (
    event_key       VARCHAR NOT NULL,
    key_hash        UBIGINT NOT NULL,
    ingest_id       BIGINT NOT NULL,
    source          VARCHAR NOT NULL,
    line            BIGINT NOT NULL,
    item            INTEGER NOT NULL DEFAULT 0,
    type            VARCHAR NOT NULL,
    ts_ms           DOUBLE NOT NULL,
    seq             BIGINT,
    run_id          VARCHAR,
    parent_run_id   VARCHAR,
    invocation_id   VARCHAR,
    agent           VARCHAR,
    node            VARCHAR,
    kind            VARCHAR,
    status          VARCHAR,
    ok              BOOLEAN,
    duration_ms     DOUBLE,
    error_code      VARCHAR,
    service         VARCHAR,
    trace_id        VARCHAR,
    raw             VARCHAR NOT NULL USING COMPRESSION zstd
);

INSERT INTO events SELECT * FROM _events_v1;
DROP TABLE _events_v1;
"""

# v3: ``fleet_calls``, every invocation with its caller agent resolved, kept
# by classification (:mod:`tracekit.store.calls`) so that the fleet report
# reads a narrow table instead of a self-join. Stores classified before v3
# made it on first use; ``IF NOT EXISTS`` keeps their rows.
_V3: Final = """
CREATE TABLE IF NOT EXISTS fleet_calls (
    root_run_id    VARCHAR NOT NULL,  -- the root run (runs.run_id)
    invocation_id  VARCHAR NOT NULL,
    caller         VARCHAR NOT NULL,  -- the calling agent ('?' when unknown)
    agent          VARCHAR NOT NULL,  -- the agent called
    service        VARCHAR,
    start_at       TIMESTAMP,
    status         VARCHAR NOT NULL,
    duration_ms    DOUBLE
);
"""

# v4: measures. Per invocation its edge source, own time and tokens (own and
# with its subtree) and models; per root run its session and tokens; per call
# in ``fleet_calls`` its own time and tokens. A store made before v4 gets them
# filled from its records here, as the derive step fills them for new ones.
_V4: Final = f"""
ALTER TABLE invocations ADD COLUMN edge_source VARCHAR;
ALTER TABLE invocations ADD COLUMN own_ms DOUBLE;
ALTER TABLE invocations ADD COLUMN input_tokens BIGINT;
ALTER TABLE invocations ADD COLUMN output_tokens BIGINT;
ALTER TABLE invocations ADD COLUMN total_input_tokens BIGINT;
ALTER TABLE invocations ADD COLUMN total_output_tokens BIGINT;
ALTER TABLE invocations ADD COLUMN models VARCHAR[];
ALTER TABLE runs ADD COLUMN session_id VARCHAR;
ALTER TABLE runs ADD COLUMN input_tokens BIGINT;
ALTER TABLE runs ADD COLUMN output_tokens BIGINT;
ALTER TABLE fleet_calls ADD COLUMN own_ms DOUBLE;
ALTER TABLE fleet_calls ADD COLUMN input_tokens BIGINT;
ALTER TABLE fleet_calls ADD COLUMN output_tokens BIGINT;
{BACKFILL_SQL}
"""

# v5: what a step called and how it failed. Tool calls and model turns read
# from OTLP spans are ``node`` records with ``call`` (``tool`` | ``llm``) and,
# when they failed, ``error``: the columns let a query find the tool that
# raised (``WHERE call = 'tool' AND NOT ok``). Steps stored before v5 keep
# NULLs (their records had no such fields before the readers wrote them).
_V5: Final = """
ALTER TABLE steps ADD COLUMN call VARCHAR;
ALTER TABLE steps ADD COLUMN error_code VARCHAR;
ALTER TABLE steps ADD COLUMN error_message VARCHAR;
"""

# v6: ``closure``, every (ancestor, descendant) pair of the delegation trees,
# for ``tracekit find`` (``a >> b``: b anywhere below a) as hash joins instead
# of a recursive walk per query. Kept by :mod:`tracekit.store.paths` in each
# derive; filled here from the invocations a store already holds.
_V6: Final = f"""
CREATE TABLE IF NOT EXISTS closure (
    root_run_id  VARCHAR NOT NULL,  -- the root run of the tree (runs.run_id)
    ancestor     VARCHAR NOT NULL,  -- the root run, or the run an invocation started
    descendant   VARCHAR NOT NULL,  -- the run an invocation started (invocations.run_id)
    distance     INTEGER NOT NULL,  -- 1: a direct child
    handoffs     BOOLEAN NOT NULL   -- every edge from ancestor down to descendant is a handoff
);

{CLOSURE_BACKFILL}
"""

# v7: the root agent's own usage on its run. The root agent has no exit
# record: its own model calls ride on ``run.end``, and counted only in the
# run's total they could not be told apart from its callees'. Kept apart here,
# the fleet's tokens table lists root agents too; filled from the records.
_V7: Final = f"""
ALTER TABLE runs ADD COLUMN own_input_tokens BIGINT;
ALTER TABLE runs ADD COLUMN own_output_tokens BIGINT;
{ROOT_USAGE_BACKFILL_SQL}
"""

# v8: the step a degraded run's failure began in. A run that ended ok with
# no invocation failed but a tool or model call failed (its agent caught the
# error and went on) is ``degraded``, its origin that step's agent; the step
# is named here. Runs already classified that hold a failed step are
# classified again by the next write (every write classifies).
_V8: Final = """
ALTER TABLE runs ADD COLUMN origin_step VARCHAR;
UPDATE runs SET classified_at = NULL
WHERE outcome = 'ok' AND run_id IN (
    SELECT coalesce(i.root_run_id, s.run_id) FROM steps s
    LEFT JOIN invocations i ON i.run_id = s.run_id WHERE NOT s.ok
);
"""

# v9: the spans are the record. ``spans`` keeps every OTLP span as received,
# once per (trace_id, span_id); the records, invocations, steps and runs of
# a trace are derived from its stored spans (``tracekit.store.spans_derive``)
# and derived again, replaced, when the trace gains a span or the rules
# change. ``derivations`` says which rules (and which of the user's dialect
# files) derived each trace;
# ``events.span_trace`` (and ``rejects.span_trace``) marks a row derived from
# that trace's spans, NULL for a v1 record kept as read. A store made before
# v9 keeps its OTLP runs, which have no spans to be derived from again.
_V9: Final = """
CREATE TABLE IF NOT EXISTS spans (
    trace_id        VARCHAR NOT NULL,   -- lowercase hex ('' when the span had none)
    span_id         VARCHAR NOT NULL,   -- lowercase hex; (trace_id, span_id) is unique
    parent_span_id  VARCHAR,
    name            VARCHAR NOT NULL,
    kind            INTEGER,            -- OTLP SpanKind (0-5), NULL when not given
    start_ns        BIGINT NOT NULL,
    end_ns          BIGINT,             -- NULL: the span has no end
    status_code     INTEGER NOT NULL,   -- 0 unset, 1 ok, 2 error
    status_message  VARCHAR,
    service         VARCHAR,            -- the resource's service.name
    attributes      VARCHAR USING COMPRESSION zstd,  -- JSON: the KeyValue list as received
    events          VARCHAR USING COMPRESSION zstd,  -- JSON: span events (exceptions, stack traces)
    links           VARCHAR,            -- JSON: span links as received
    linked          VARCHAR[],          -- the other traces its links name
    resource        VARCHAR USING COMPRESSION zstd,  -- JSON: the resource (attributes ...)
    scope           VARCHAR,            -- JSON: the instrumentation scope
    extra           VARCHAR,            -- JSON: every other key of the span (traceState, flags ...)
    ingest_id       BIGINT NOT NULL,
    source          VARCHAR NOT NULL,
    line            BIGINT NOT NULL,    -- the source line (or spool entry) it came in
    pos             INTEGER NOT NULL    -- its place among the spans of that line
);

CREATE TABLE IF NOT EXISTS derivations (
    trace_id    VARCHAR NOT NULL,   -- unique: the trace whose spans were derived
    deriver     VARCHAR NOT NULL,   -- tracekit.intake.otlp.derivation.deriver_version()
    spans       BIGINT NOT NULL,    -- how many stored spans it had
    derived_at  TIMESTAMP NOT NULL,
    dialects    VARCHAR             -- the user's dialect files it was derived with (NULL: none)
);

ALTER TABLE events ADD COLUMN span_trace VARCHAR;
ALTER TABLE rejects ADD COLUMN span_trace VARCHAR;

-- The records OTLP ingests made before v9 belong to their trace: if its
-- spans are ingested again, they are replaced by what the spans derive to.
UPDATE events SET span_trace = coalesce(trace_id, '')
WHERE ingest_id IN (SELECT ingest_id FROM ingest_log WHERE format = 'otlp');
"""

# v10: ``loops``, one row for each circle a run's agents went round, however it
# stopped: a framework's limit raised ('limit'), cut off without an error
# ('silent'), refused on the call path ('refused') or ended ok after its
# revisits ('finished'); with the cost spent inside the circle. Written by the
# classification; the fleet report, the dashboards and ``/metrics`` read it.
_V10: Final = """
CREATE TABLE loops (
    run_id         VARCHAR NOT NULL,
    circle         VARCHAR NOT NULL,
    revisits       INTEGER NOT NULL,
    stopped        VARCHAR NOT NULL /* 'limit' | 'silent' | 'refused' | 'finished' */,
    limit_code     VARCHAR,
    origin_agent   VARCHAR,
    invocations    INTEGER NOT NULL,
    model_calls    INTEGER,
    input_tokens   BIGINT,
    output_tokens  BIGINT,
    duration_ms    DOUBLE
);
"""

# v11: ``loops`` gets its rows. Classification writes them (and classifies again
# the runs a limit stopped while their agents went round a circle: they are
# ``failed:recursion`` or ``degraded`` now); the runs already classified that
# activate an agent twice (only those can go round one) are classified again
# by the next write.
_V11: Final = """
UPDATE runs SET classified_at = NULL
WHERE run_id IN (
    SELECT DISTINCT run_id FROM (
        SELECT root_run_id AS run_id, agent FROM invocations
        UNION ALL
        SELECT run_id, agent FROM runs WHERE agent IS NOT NULL
    ) GROUP BY run_id, agent HAVING count(*) > 1
);
"""

# v12: ``span_traces``, the directory of ``spans``: one row for each trace a
# load stored spans of, with that load's ``ingest_id`` and how many. A load
# finds the stored spans of its traces (its duplicates, the traces stored
# before) and a derivation reads a trace's spans through it, from the row
# groups of those loads only, instead of scanning every stored span.
_V12: Final = """
CREATE TABLE IF NOT EXISTS span_traces (
    trace_id   VARCHAR NOT NULL,
    ingest_id  BIGINT NOT NULL,
    spans      BIGINT NOT NULL
);

INSERT INTO span_traces
SELECT trace_id, ingest_id, count(*) FROM spans GROUP BY trace_id, ingest_id;
"""

SCHEMA_VERSION: Final = 12

#: ``MIGRATIONS[n - 1]`` takes a store from version ``n - 1`` to ``n``.
MIGRATIONS: Final[tuple[str, ...]] = (
    _V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12,
)  # fmt: skip
