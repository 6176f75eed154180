"""The SQL that turns lines of text into checked, typed v1 records.

A batch of lines (an Arrow table ``line, item, text``) is parsed by DuckDB in
one set-based pass: ``json_type`` over a list of paths checks every field's
JSON type with one parse, ``from_json`` extracts the typed values with
another. A line passes this fast path only if it has exactly the shape that
:func:`tracekit.events.decode_event` accepts without help; every other line
goes to msgspec in Python, which either accepts it (RFC 3339 times, say) or
gives the reason it is rejected, in the same words as ``tracekit tree``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from tracekit.events import CALLS, KINDS, STATUSES
from tracekit.validate import MAX_DEPTH, MAX_TS_MS, MIN_TS_MS

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_KEY_SQL",
    "PARSE_SQL",
    "TRUSTED_PARSE_SQL",
    "event_key_sql",
    "parse_sql",
]

# (JSON key, DuckDB type for from_json)
_FIELDS: Final = (
    ("type", "VARCHAR"),
    ("ts", "DOUBLE"),
    ("seq", "BIGINT"),
    ("runId", "VARCHAR"),
    ("parentRunId", "VARCHAR"),
    ("invocationId", "VARCHAR"),
    ("agent", "VARCHAR"),
    ("node", "VARCHAR"),
    ("kind", "VARCHAR"),
    ("status", "VARCHAR"),
    ("ok", "BOOLEAN"),
    ("durationMs", "DOUBLE"),
    ("service", "VARCHAR"),
    ("traceId", "VARCHAR"),
    ("id", "VARCHAR"),
    ("failure", "VARCHAR"),
    ("error", "JSON"),
    ("attrs", "JSON"),
    ("call", "VARCHAR"),
    ("session", "VARCHAR"),
    ("usage", "JSON"),
)
_EXTRA_PATHS: Final = (
    "$",
    "$.error.code",
    "$.error.message",
    "$.error.chain",
    "$.error.cause",
    "$.usage.inputTokens",
    "$.usage.outputTokens",
    "$.usage.models",
)
_PATHS: Final = tuple(f"$.{key}" for key, _ in _FIELDS) + _EXTRA_PATHS
_INDEX: Final = {path: i + 1 for i, path in enumerate(_PATHS)}

_NUM = "'UBIGINT', 'BIGINT', 'DOUBLE'"


def _jt(path: str) -> str:
    return f"jt[{_INDEX[path]}]"


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _rule(key: str, rule: str) -> str:
    jt = _jt(f"$.{key}")
    col = f"j.{key}"
    optional = f"coalesce({jt}, 'NULL') = 'NULL'"
    checks = {
        "str?": f"coalesce({jt}, 'NULL') IN ('VARCHAR', 'NULL')",
        "id": f"({jt} = 'VARCHAR' AND {col} <> '')",
        "id?": f"({optional} OR ({jt} = 'VARCHAR' AND {col} <> ''))",
        "ts": f"({jt} IN ({_NUM}) AND {col} BETWEEN {MIN_TS_MS} AND {MAX_TS_MS})",
        "duration?": f"({optional} OR ({jt} IN ({_NUM}) AND {col} BETWEEN -{MAX_TS_MS} AND {MAX_TS_MS}))",
        # An integer beyond BIGINT is extracted as NULL: such a seq is no fast one.
        "seq?": f"({optional} OR ({jt} IN ('UBIGINT', 'BIGINT') AND {col} IS NOT NULL))",
        "bool": f"{jt} = 'BOOLEAN'",
        "bool?": f"coalesce({jt}, 'NULL') IN ('BOOLEAN', 'NULL')",
        "kind": f"({jt} IS NULL OR ({jt} = 'VARCHAR' AND {_one_of('j.kind', KINDS)}))",
        "call?": f"({optional} OR ({jt} = 'VARCHAR' AND {_one_of('j.call', CALLS)}))",
        "status?": f"({optional} OR ({jt} = 'VARCHAR' AND {_one_of('j.status', STATUSES)}))",
        "failure?": f"({optional} OR ({jt} = 'VARCHAR' AND {_one_of('j.failure', ('delegation', 'agent'))}))",
        # A chain (its items' types) or a cause (its depth and fields) is
        # left to msgspec, as is an error with a key twice (DuckDB keeps the
        # first, msgspec the last).
        "error?": (
            f"({optional} OR ({jt} = 'OBJECT' AND {_jt('$.error.code')} = 'VARCHAR'"
            f" AND coalesce({_jt('$.error.message')}, 'VARCHAR') = 'VARCHAR'"
            f" AND coalesce({_jt('$.error.chain')}, 'NULL') = 'NULL'"
            f" AND coalesce({_jt('$.error.cause')}, 'NULL') = 'NULL'))"
        ),
        # Token counts are whole and not negative, models all strings.
        "usage?": (
            f"({optional} OR ({jt} = 'OBJECT'"
            f" AND coalesce({_jt('$.usage.inputTokens')}, 'NULL') IN ('UBIGINT', 'NULL')"
            f" AND coalesce({_jt('$.usage.outputTokens')}, 'NULL') IN ('UBIGINT', 'NULL')"
            f" AND (coalesce({_jt('$.usage.models')}, 'NULL') = 'NULL'"
            f" OR ({_jt('$.usage.models')} = 'ARRAY' AND len(list_filter("
            f"json_type(j.usage, '$.models[*]'), lambda x: x <> 'VARCHAR')) = 0))))"
        ),
        # Fewer opening brackets than the limit: it cannot nest deeper.
        "attrs?": (
            f"({optional} OR ({jt} = 'OBJECT' AND length({col})"
            f" - length(replace(replace({col}, '{{', ''), '[', '')) <= {MAX_DEPTH}))"
        ),
    }
    return checks[rule]


# The keys an error and a usage may hold (each once: another key, which
# msgspec skips however deep, or one twice, goes the slow way).
_NESTED: Final = {
    "error": ("$.error.code", "$.error.message"),
    "usage": ("$.usage.inputTokens", "$.usage.outputTokens", "$.usage.models"),
}


def _nested_keys_ok() -> str:
    """An error's and a usage's keys are their own, each once (json_keys: valid JSON only)."""
    return " AND ".join(
        f"(j.{key} IS NULL OR {_jt(f'$.{key}')} <> 'OBJECT' OR len(json_keys(j.{key}))"
        f" = {_present(str(_INDEX[p]) for p in paths)})"
        for key, paths in _NESTED.items()
    )


_COMMON: Final = (("ts", "ts"), ("seq", "seq?"), ("service", "str?"), ("traceId", "str?"))
_COMMON_ATTRS: Final = (("attrs", "attrs?"),)
_INVOCATION: Final = (
    ("invocationId", "id"),
    ("runId", "id"),
    ("parentRunId", "id?"),
    ("agent", "id"),
    ("node", "id?"),
)
_RULES: Final = {
    "enter": (*_INVOCATION, ("kind", "kind")),
    "exit": (
        *_INVOCATION,
        ("ok", "bool?"),
        ("durationMs", "duration?"),
        ("status", "status?"),
        ("error", "error?"),
        ("usage", "usage?"),
    ),
    "node": (
        ("runId", "id"),
        ("id", "id"),
        ("ok", "bool?"),
        ("durationMs", "duration?"),
        ("call", "call?"),
        ("error", "error?"),
        ("usage", "usage?"),
    ),
    "run.start": (("runId", "id"), ("agent", "id"), ("session", "id?")),
    "run.end": (
        ("runId", "id"),
        ("ok", "bool"),
        ("durationMs", "duration?"),
        ("failure", "failure?"),
        ("error", "error?"),
        ("usage", "usage?"),
    ),
}


# What DuckDB's JSON reader takes and msgspec does not: a trailing comma, a
# NaN or Infinity, a number too big for a double (a wide net: a line caught
# in it only goes the slow way, to msgspec, for the exact answer).
_LAX_JSON: Final = (
    r",\s*[]}]|[:,\[]\s*[-+]?(?i:nan|inf)"
    r"|[:,\[]\s*-?[0-9]+(\.[0-9]*)?[eE]\+?[0-9]{3}|[0-9]{309}"
)


def _fast_ok(*, trusted: bool) -> str:
    if trusted:  # msgspec has accepted it, and wrote it out again
        return f"(jt[{_INDEX['$']}] = 'OBJECT')"
    common = " AND ".join(_rule(k, r) for k, r in (*_COMMON, *_COMMON_ATTRS))
    by_type = " ".join(
        f"WHEN '{t}' THEN {' AND '.join(_rule(k, r) for k, r in rules)}"
        for t, rules in _RULES.items()
    )
    # Only the type's own keys, each once: json_keys lists a key given twice
    # twice, and a key the type does not read, which msgspec skips (a skipped
    # value nested a thousand deep is a RecursionError, refused as too deep).
    own_keys = " ".join(
        f"WHEN '{t}' THEN len(json_keys(text)) = {_present(_own(rules))}"
        for t, rules in _RULES.items()
    )
    # The cheap test first. A plain line (no white space, no comma before a
    # closing bracket: ``keys`` counted, see tracekit.store.sources) has a '":'
    # after every key, so as many as the known keys found means no other key
    # and none twice; and lax JSON (NaN, a huge number) could only be in a
    # known field, whose type and range are checked above. Only the other
    # lines pay for the regex and json_keys.
    counted = " ".join(
        f"WHEN '{t}' THEN keys = {_present([*_own(rules), *_nested_indexes()])}"
        for t, rules in _RULES.items()
    )
    plain = f"keys >= 0 AND {_jt('$.attrs')} IS NULL AND CASE j.type {counted} END"
    # CASE, not AND: json_keys must only see valid JSON, and the last checks
    # cost most, so only lines that pass the others pay for them.
    return (
        f"CASE WHEN jt[{_INDEX['$']}] = 'OBJECT' AND {_jt('$.type')} = 'VARCHAR' AND {common}"
        f" AND CASE j.type {by_type} ELSE false END"
        f" THEN CASE WHEN {plain} THEN true"
        f" ELSE NOT regexp_matches(text, '{_LAX_JSON}') AND CASE j.type {own_keys} END"
        f" AND {_nested_keys_ok()} END"
        " ELSE false END"
    )


def _nested_indexes() -> list[str]:
    return [str(_INDEX[p]) for paths in _NESTED.values() for p in paths]


def _own(rules: tuple[tuple[str, str], ...]) -> list[str]:
    """The jt indexes of a record type's own top-level keys."""
    own = ("type", *(k for k, _ in (*_COMMON, *_COMMON_ATTRS, *rules)))
    return [str(_INDEX[f"$.{k}"]) for k in own]


def _present(indexes: Iterable[str]) -> str:
    """How many of the jt entries at ``indexes`` are found (a sum: no list built per row)."""
    return "(" + " + ".join(f"(jt[{i}] IS NOT NULL)::INTEGER" for i in indexes) + ")"


_STRUCT: Final = "{" + ", ".join(f'"{k}": "{t}"' for k, t in _FIELDS) + "}"
_PATH_LIST: Final = "[" + ", ".join(f"'{p}'" for p in _PATHS) + "]"
_SEP = "chr(31)"

#: The columns of ``events`` that a parsed batch fills, in table order.
EVENT_COLUMNS: Final = (
    "event_key",
    "key_hash",
    "ingest_id",
    "source",
    "line",
    "item",
    "type",
    "ts_ms",
    "seq",
    "run_id",
    "parent_run_id",
    "invocation_id",
    "agent",
    "node",
    "kind",
    "status",
    "ok",
    "duration_ms",
    "error_code",
    "service",
    "trace_id",
    "raw",
)


def event_key_sql(type_: str, run: str, invocation: str, node: str, ts: str, seq: str) -> str:
    """SQL: a record's identity (duplicates are counted once) from the expressions of its fields.

    Example:
        >>> "concat_ws(chr(31), 'node', run_id, node" in EVENT_KEY_SQL
        True
    """
    return f"""CASE {type_}
        WHEN 'enter' THEN concat_ws({_SEP}, 'enter', {run}, {invocation})
        WHEN 'exit' THEN concat_ws({_SEP}, 'exit', {run}, {invocation})
        WHEN 'node' THEN concat_ws({_SEP}, 'node', {run}, {node}, {ts}::VARCHAR, {seq}::VARCHAR)
        ELSE {type_} || {_SEP} || {run}
    END"""


#: :func:`event_key_sql` over the columns of ``events`` (:mod:`tracekit.store.event_columns`).
EVENT_KEY_SQL: Final = event_key_sql("type", "run_id", "invocation_id", "node", "ts_ms", "seq")

_INV = "j.type IN ('enter', 'exit')"
_HAS_ERROR = f"{_jt('$.error')} = 'OBJECT'"
_EXIT_STATUS = (
    f"coalesce(j.status, CASE WHEN j.ok = false OR {_HAS_ERROR} THEN 'error' ELSE 'ok' END)"
)


def parse_sql(*, trusted: bool = False) -> str:
    """The query that parses ``_batch`` (line, item, text, raw, keys): a row per non-blank line.

    ``fast_ok`` rows carry every events column, the others only line/item/raw.
    A row is ``fast_ok`` only if :func:`tracekit.events.decode_event` would
    accept it as it is; with ``trusted``, every JSON object is (lines that
    msgspec accepted and encoded again).
    """
    return f"""
WITH b AS (
    -- starts_with first: it settles nearly every line without trim's copy.
    SELECT line, item, text, raw, keys, json_valid(text) AS valid
    FROM _batch WHERE starts_with(text, '{{') OR trim(text) <> ''
), t AS (
    SELECT line, item, text, raw, keys,
        CASE WHEN valid THEN json_type(text, {_PATH_LIST}) END AS jt
    FROM b
), p AS (
    SELECT line, item, text, raw, keys, jt,
        CASE WHEN jt[{_INDEX["$"]}] = 'OBJECT' THEN from_json(text, '{_STRUCT}') END AS j
    FROM t
)
SELECT *, hash(event_key) AS key_hash FROM (SELECT
    line, item, raw,
    coalesce({_fast_ok(trusted=trusted)}, false) AS fast_ok,
    {event_key_sql("j.type", "j.runId", "j.invocationId", "j.id", "j.ts", "j.seq")} AS event_key,
    j.type AS type,
    j.ts AS ts_ms,
    j.seq AS seq,
    j.runId AS run_id,
    CASE WHEN {_INV} THEN j.parentRunId END AS parent_run_id,
    CASE WHEN {_INV} THEN j.invocationId END AS invocation_id,
    CASE WHEN j.type IN ('enter', 'exit', 'run.start') THEN j.agent END AS agent,
    CASE WHEN {_INV} THEN j.node WHEN j.type = 'node' THEN j.id END AS node,
    CASE WHEN j.type = 'enter' THEN coalesce(j.kind, 'delegate') END AS kind,
    CASE WHEN j.type = 'exit' THEN {_EXIT_STATUS} END AS status,
    CASE j.type
        WHEN 'exit' THEN coalesce(j.ok, {_EXIT_STATUS} = 'ok')
        WHEN 'node' THEN coalesce(j.ok, CASE WHEN {_HAS_ERROR} THEN false END)
        WHEN 'run.end' THEN j.ok
    END AS ok,
    CASE WHEN j.type IN ('exit', 'node', 'run.end') THEN j.durationMs END AS duration_ms,
    CASE WHEN j.type IN ('exit', 'node', 'run.end') AND {_HAS_ERROR}
        THEN json_extract_string(j.error, '$.code') END AS error_code,
    j.service AS service,
    j.traceId AS trace_id
FROM p)
"""


PARSE_SQL: Final = parse_sql()
TRUSTED_PARSE_SQL: Final = parse_sql(trusted=True)
