"""The ``tracekit`` command: the only package that imports typer.

- :mod:`~tracekit.cli.app`: the typer app, its commands and :func:`main`;
- :mod:`~tracekit.cli.quick`: plain ``tracekit tree``/``fleet`` command lines,
  read without typer's parse;
- :mod:`~tracekit.cli.tree`, :mod:`~tracekit.cli.fleet`: what those commands
  print, from a file or a store;
- :mod:`~tracekit.cli.tables`: the store's listings as a table, JSON lines or CSV;
- :mod:`~tracekit.cli.progress`: the ingest's progress bar, on a terminal only.
"""

from __future__ import annotations

from tracekit.cli.app import app, main

__all__ = ["app", "main"]
