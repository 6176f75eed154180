"""The ``tracekit`` command: the only package that imports typer.

- :mod:`~tracekit.cli.entry`: the console script's :func:`main`; the plainest
  command lines run without typer (:mod:`~tracekit.cli.quick` reads them);
- :mod:`~tracekit.cli.app`: the typer app (``tracekit.cli.app.app``), for
  every other command line; its commands are in :mod:`~tracekit.cli.commands`;
- :mod:`~tracekit.cli.output`: printing, ``Error:`` lines and exit codes, for both;
- :mod:`~tracekit.cli.tree`, :mod:`~tracekit.cli.fleet`, :mod:`~tracekit.cli.find`:
  what those commands print, from a file or a store;
- :mod:`~tracekit.cli.tables`: the store's listings as a table, JSON lines or CSV;
- :mod:`~tracekit.cli.progress`: the ingest's progress bar, on a terminal only.
"""

from __future__ import annotations

import signal as _signal
import sys as _sys
from pathlib import Path as _Path

from tracekit.cli.interrupt import leave_on_signals as _leave_on_signals

# The console script imports the command's modules for a few hundred
# milliseconds: Ctrl-C then must not print an import's traceback. Only the
# `tracekit` command does this; a program importing the package keeps its own handlers.
if _sys.argv and _Path(_sys.argv[0]).name == "tracekit":
    _leave_on_signals(_signal.SIGINT, _signal.SIGTERM)

# typer is imported only for the command lines that need it: the app is
# tracekit.cli.app.app, not a name here (a submodule named `app` would shadow it).
from tracekit.cli.entry import main

__all__ = ["main"]
