"""OTLP JSON lines decoded by DuckDB into one flat table of spans, without a Python object a span.

Each line (``line``, ``text``) is parsed once with an explicit nested schema
(resourceSpans -> scopeSpans -> spans, attributes as key/value structs) and
unnested into :data:`SPAN_COLUMNS`: one row a span, the attributes the
mapping reads as their own columns. Whether a line decodes exactly as the
Python decoder would (canonical ids, plain numbers, the camelCase spelling)
is said per line in ``_otlp_lines.exact``: the caller sends a file with any
inexact line down the per-span path whole, so a bad line is refused exactly
as it always was.

Example:
    >>> import duckdb, pyarrow as pa
    >>> con = duckdb.connect()
    >>> doc = ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c",'
    ...     '"spanId":"b7ad6b7169203331","name":"invoke_agent a","startTimeUnixNano":"1000000",'
    ...     '"endTimeUnixNano":"5000000","attributes":[{"key":"gen_ai.agent.name",'
    ...     '"value":{"stringValue":"a"}}]}]}]}]}')
    >>> decode_lines(con, pa.table({"line": [1], "text": [doc]}))
    True
    >>> con.execute("SELECT line, id, agent, start_ns, end_ns FROM _otlp_spans").fetchall()
    [(1, 'b7ad6b7169203331', 'a', 1000000, 5000000)]
"""

from __future__ import annotations

from typing import Final

import duckdb
import pyarrow as pa

from tracekit.intake.otlp.decode_json import ARGUMENT_KEYS, SPAN_KEYS
from tracekit.intake.otlp.limits import MAX_COUNT, MAX_DURATION_NS, MAX_NAME_CHARS
from tracekit.validate import MAX_TS_NS

__all__ = ["READ_KEYS", "SPAN_COLUMNS", "decode_lines"]

#: The attributes the set-based mapping reads, by the column each becomes.
READ_KEYS: Final = {
    "op": "gen_ai.operation.name",
    "agent": "gen_ai.agent.name",
    "tool": "gen_ai.tool.name",
    "conversation": "gen_ai.conversation.id",
    "model": "gen_ai.response.model",
    "tokens_in": "gen_ai.usage.input_tokens",
    "tokens_out": "gen_ai.usage.output_tokens",
}
_OTHER_KEYS: Final = sorted(SPAN_KEYS - set(READ_KEYS.values()))

#: The spans table, whichever encoding it came from (JSON here, protobuf in ``proto``).
SPAN_COLUMNS: Final = (
    "line",  # the source line (or request) the span was read from
    "ri",  # the index of its resourceSpans in the line (from 1)
    "pos",  # its place among the spans of that resource, in the order written
    "raw",  # its JSON text as written (NULL from protobuf)
    "service",  # the resource's service.name, if a string
    "trace",
    "id",
    "parent",  # '' for a root
    "name",
    "start_ns",
    "end_ns",  # NULL when the span never ended
    "status_code",  # 0 unset, 1 ok, 2 error; NULL when written some other way
    "message",
    *READ_KEYS,  # each a string (the token counts BIGINT), NULL when absent
    "typed",  # every read attribute has the type the mapping expects
    "others",  # how many other attributes the per-span mapping reads (SPAN_KEYS)
    "arguments",  # how many attributes a transfer's target is read from (ARGUMENT_KEYS)
    "events",  # how many span events
    "link_traces",  # the traces its span links point into
)

_KV = (
    '{"key":"VARCHAR","value":{"stringValue":"VARCHAR","intValue":"JSON","boolValue":"JSON",'
    '"doubleValue":"JSON","arrayValue":"JSON","kvlistValue":"JSON","bytesValue":"JSON"}}'
)
_SPAN = (
    '{"traceId":"JSON","spanId":"JSON","parentSpanId":"JSON","name":"JSON",'
    '"startTimeUnixNano":"JSON","endTimeUnixNano":"JSON","attributes":[' + _KV + "],"
    '"status":{"code":"JSON","message":"JSON"},"events":"JSON[]","links":[{"traceId":"JSON"}]}'
)
# Spans are kept as their JSON text first (a trace the SQL does not map is
# handed to the per-span decoder as it was written), then read field by field.
_DOC = (
    '{"resourceSpans":[{"resource":{"attributes":['
    + _KV
    + ']},"scopeSpans":[{"spans":["JSON"]}]}]}'
)
# The ways of writing OTLP JSON that only the per-span decoder reads (snake_case,
# the old instrumentationLibrarySpans): a line naming one is not decoded here.
_OTHER_SPELLINGS: Final = ("resource_spans", "scope_spans", "instrumentationLibrarySpans")


def _attr(column: str, key: str) -> str:
    return f"list_filter(sp.attributes, lambda a: a.key = '{key}')[-1].value AS {column}"


def _read_columns() -> str:
    return ",\n    ".join(_attr(f"_{column}", key) for column, key in READ_KEYS.items())


_OTHERS_LIST = ", ".join(f"'{key}'" for key in _OTHER_KEYS)
_ARGUMENTS_LIST = ", ".join(f"'{key}'" for key in ARGUMENT_KEYS)

_VALID_SQL = f"""
SELECT coalesce(bool_and(json_valid(text) AND json_type(text) = 'OBJECT'
    AND NOT ({" OR ".join(f"contains(text, '{w}')" for w in _OTHER_SPELLINGS)})), true)
FROM _otlp_input
"""

# One streaming statement from text to spans: no whole document is kept.
_RAW = f"""
WITH r AS (
    SELECT line, unnest(list_transform(from_json(text, '{_DOC}').resourceSpans,
        lambda x, i: {{'rs': x, 'ri': i}})) AS rr FROM _otlp_input
), s AS (
    SELECT line, rr.ri AS ri,
        list_filter(rr.rs.resource.attributes, lambda a: a.key = 'service.name')[-1].value AS svc,
        rr.rs.scopeSpans IS NULL AS no_scopes,
        unnest(list_transform(coalesce(rr.rs.scopeSpans, []), lambda x, i: {{'ss': x, 'si': i}})) AS sr
    FROM r
), q AS (
    SELECT line, ri, svc, no_scopes, sr.ss.spans IS NULL AS no_spans,
        unnest(list_transform(sr.ss.spans, lambda x, i: {{'raw': x, 'pos': sr.si * 1000000000 + i}})) AS pr
    FROM s
), p AS (
    SELECT * EXCLUDE (pr), pr.raw AS raw, pr.pos AS pos, from_json(pr.raw, '{_SPAN}') AS sp FROM q
), _otlp_raw AS (
    SELECT line, ri, pos, svc, no_scopes, no_spans, raw,
        sp.traceId AS _trace, sp.spanId AS _id, sp.parentSpanId AS _parent, sp.name AS _name,
        sp.startTimeUnixNano AS _start, sp.endTimeUnixNano AS _end,
        sp.status.code AS _code, sp.status.message AS _message,
        {_read_columns()},
        len(list_filter(sp.attributes, lambda a: a.key IN ({_OTHERS_LIST}))) AS others,
        len(list_filter(sp.attributes, lambda a: a.key IN ({_ARGUMENTS_LIST}))) AS arguments,
        coalesce(len(sp.events), 0) AS events,
        [json_extract_string(l.traceId, '$') FOR l IN coalesce(sp.links, [])] AS link_traces
    FROM p
)"""

# A JSON string value, else NULL (a number or anything else is not read here).
_STR = "CASE WHEN json_type({0}) = 'VARCHAR' THEN json_extract_string({0}, '$') END"
_ID = "(_{0} IS NULL OR json_type(_{0}) = 'VARCHAR' AND regexp_full_match({1}, '{2}'))"
# Nanoseconds as the per-span decoder reads them (``int()``): digits, or a JSON integer.
_NANOS = (
    "(_{0} IS NULL OR json_type(_{0}) IN ('UBIGINT', 'BIGINT')"
    " OR json_type(_{0}) = 'VARCHAR' AND regexp_full_match(json_extract_string(_{0}, '$'), '[0-9]*'))"
)

# The door's limits (tracekit.intake.otlp.limits): a span past one goes the per-span way,
# where it is refused or its strings cut, exactly as the collector does.
_WITHIN_LIMITS = f"""(
    (end_h IS NULL OR end_h = 0 OR end_h BETWEEN start_h AND start_h + {MAX_DURATION_NS})
    AND length(coalesce(name, '')) <= {MAX_NAME_CHARS}
    AND length(coalesce(svc.stringValue, '')) <= {MAX_NAME_CHARS}
    AND length(coalesce({_STR.format("_message")}, '')) <= {MAX_NAME_CHARS}
    AND {
    " AND ".join(
        f"length(coalesce(_{c}.stringValue, '')) <= {MAX_NAME_CHARS}"
        for c in READ_KEYS
        if not c.startswith("tokens")
    )
}
    AND coalesce(TRY_CAST(json_extract_string(_tokens_in.intValue, '$') AS BIGINT), 0) <= {
    MAX_COUNT
}
    AND coalesce(TRY_CAST(json_extract_string(_tokens_out.intValue, '$') AS BIGINT), 0) <= {
    MAX_COUNT
}
)"""

_SPANS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _otlp_spans AS
{_RAW}, _otlp_typed AS (
SELECT *,
    {_STR.format("_trace")} AS trace, {_STR.format("_id")} AS id,
    coalesce({_STR.format("_parent")}, '') AS parent, {_STR.format("_name")} AS name,
    TRY_CAST(json_extract_string(_start, '$') AS HUGEINT) AS start_h,
    TRY_CAST(json_extract_string(_end, '$') AS HUGEINT) AS end_h
FROM _otlp_raw)
SELECT line, ri, pos, raw::VARCHAR AS raw,
    CASE WHEN svc.stringValue IS NOT NULL THEN svc.stringValue END AS service,
    trace, id, parent, coalesce(name, '') AS name,
    start_h::BIGINT AS start_ns, CASE WHEN end_h <> 0 THEN end_h::BIGINT END AS end_ns,
    CASE WHEN _code IS NULL THEN 0
        WHEN json_type(_code) IN ('UBIGINT', 'BIGINT') THEN _code::BIGINT END AS status_code,
    coalesce({_STR.format("_message")}, '') AS message,
    {", ".join(f"_{c}.stringValue AS {c}" for c in READ_KEYS if not c.startswith("tokens"))},
    TRY_CAST(json_extract_string(_tokens_in.intValue, '$') AS BIGINT) AS tokens_in,
    TRY_CAST(json_extract_string(_tokens_out.intValue, '$') AS BIGINT) AS tokens_out,
    ({" AND ".join(f"(_{c} IS NULL OR _{c}.stringValue IS NOT NULL)" for c in READ_KEYS if not c.startswith("tokens"))}
     AND (_tokens_in IS NULL OR regexp_full_match(json_extract_string(_tokens_in.intValue, '$'), '[0-9]{{1,18}}'))
     AND (_tokens_out IS NULL OR regexp_full_match(json_extract_string(_tokens_out.intValue, '$'), '[0-9]{{1,18}}'))
    ) AS typed,
    others, arguments, events, link_traces,
    -- exactly what the per-span decoder reads, else the whole file goes that way
    (NOT no_scopes AND NOT no_spans
     AND {_ID.format("trace", "trace", "[0-9a-f]{32}")} AND trace IS NOT NULL
     AND {_ID.format("id", "id", "[0-9a-f]{16}")} AND id IS NOT NULL
     AND {_ID.format("parent", "parent", "([0-9a-f]{16})?")}
     AND (_name IS NULL OR name IS NOT NULL)
     AND {_NANOS.format("start")} AND {_NANOS.format("end")}
     AND start_h > 0 AND start_h <= {MAX_TS_NS}
     AND (_end IS NULL OR end_h BETWEEN 0 AND {MAX_TS_NS})
     AND (svc IS NULL OR svc.stringValue IS NOT NULL)
     AND (_message IS NULL OR json_type(_message) = 'VARCHAR')
     AND coalesce(list_bool_and([t IS NOT NULL AND regexp_full_match(t, '[0-9a-f]{{32}}') FOR t IN link_traces]), true)
     AND {_WITHIN_LIMITS}
    ) AS exact
FROM _otlp_typed
"""

_EXACT_SQL = "SELECT coalesce(bool_and(coalesce(exact, false)), true) FROM _otlp_spans"
# A line that gave no span (not OTLP, nested past what DuckDB unnests, no
# spans at all) is read, counted or refused by the per-span path only.
_SPANLESS_SQL = """
SELECT EXISTS (SELECT 1 FROM _otlp_input i ANTI JOIN (SELECT DISTINCT line FROM _otlp_spans) s
    ON i.line = s.line)
"""


def decode_lines(con: duckdb.DuckDBPyConnection, lines: pa.Table) -> bool:
    """Decode a table of OTLP JSON lines (``line``, ``text``) into the temp table ``_otlp_spans``.

    Returns whether every line decoded exactly as the per-span decoder reads
    it; if not, the caller reads those lines the per-span way.
    """
    con.register("_otlp_input", lines)
    try:
        if not con.execute(_VALID_SQL).fetchall()[0][0]:
            return False
        con.execute(_SPANS_SQL)
        if con.execute(_SPANLESS_SQL).fetchall()[0][0]:
            return False
        return bool(con.execute(_EXACT_SQL).fetchall()[0][0])
    except duckdb.InterruptException:
        raise  # the ingest was asked to stop
    except duckdb.Error:
        return False  # something DuckDB does not read (nesting, encoding): the other path
    finally:
        con.unregister("_otlp_input")
