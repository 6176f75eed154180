"""The ``tracekit`` command: the only package that imports typer.

- :mod:`~tracekit.cli.app`: the typer app, its commands and :func:`main`;
- :mod:`~tracekit.cli.quick`: plain ``tracekit tree``/``fleet`` command lines,
  read without typer's parse;
- :mod:`~tracekit.cli.tree`, :mod:`~tracekit.cli.fleet`: what those commands
  print, from a file or a store;
- :mod:`~tracekit.cli.tables`: the store's listings as a table, JSON lines or CSV;
- :mod:`~tracekit.cli.rows`: an Arrow table's columns as plain values, printed
  by ``tables`` without pandas (``tracekit find``);
- :mod:`~tracekit.cli.progress`: the ingest's progress bar, on a terminal only.
"""

from __future__ import annotations

import signal as _signal
import sys as _sys
from pathlib import Path as _Path

from tracekit.cli.interrupt import leave_on_signals as _leave_on_signals

# The console script imports typer and the app for a few hundred milliseconds:
# Ctrl-C then must not print an import's traceback. Only the `tracekit`
# command does this; a program importing the package keeps its own handlers.
if _sys.argv and _Path(_sys.argv[0]).name == "tracekit":
    _leave_on_signals(_signal.SIGINT, _signal.SIGTERM)

from tracekit.cli.app import app, main

__all__ = ["app", "main"]
