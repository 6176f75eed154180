"""OTLP spans as columns: decoded into a DuckDB table and the common shapes mapped set-based.

``decode`` turns OTLP JSON lines into the spans table (``proto`` the
protobuf bodies a collector receives), ``probe`` asks the per-span converter
how it reads each distinct name, and ``mapping`` maps the traces of a common
shape to v1 record text in SQL, leaving the rest, trace by trace, to the
per-span converter (:class:`~tracekit.intake.otlp.convert.OtlpConverter`).
"""

from tracekit.intake.otlp.columns.decode import SPAN_COLUMNS, decode_lines
from tracekit.intake.otlp.columns.mapping import map_spans
from tracekit.intake.otlp.columns.proto import proto_spans

__all__ = ["SPAN_COLUMNS", "decode_lines", "map_spans", "proto_spans"]
