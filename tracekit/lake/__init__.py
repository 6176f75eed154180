"""The store beyond one machine: a Parquet lake, and the fleet analyses on several engines.

- :mod:`~tracekit.lake.layout`: the lake's folders, partition keys and escaping;
- :mod:`~tracekit.lake.export`: :func:`export_lake` (``tracekit export``), incremental
  and crash-safe;
- :mod:`~tracekit.lake.engine`: DuckDB or Spark (through Spark Connect) over a
  lake, answering the store's own SQL: every difference between the engines is there;
- :mod:`~tracekit.lake.classify`: the failure classification over a lake.
"""

from __future__ import annotations

from tracekit.lake.export import ExportReport, export_lake

__all__ = ["ExportReport", "export_lake"]
