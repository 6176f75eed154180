"""The console script's ``main``: plain command lines run before typer is imported.

Importing typer (and the pydantic adapters it builds for each parameter) and
the app's module graph took 0.15-0.3 s of every command, more than the query
of ``tracekit find`` on a 200,000-run store. The plainest ``tracekit tree``,
``fleet`` and ``find`` command lines (:mod:`tracekit.cli.quick`) are run here
straight away; anything else, ``--help`` and every error of usage included,
goes to the typer app (:mod:`tracekit.cli.app`), whose messages stay the only
ones. Both roads print through :mod:`tracekit.cli.output`.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import Any

from tracekit.cli.interrupt import leave_on_signals
from tracekit.cli.output import FAST_EXIT, exit_now, fail
from tracekit.cli.quick import quick_find_args, quick_fleet_args, quick_tree_args
from tracekit.errors import TracekitError

__all__ = ["main"]


def main() -> None:
    """Run the CLI; turn a TracekitError into one line on stderr and exit 2."""
    FAST_EXIT.clear()
    # Ctrl-C from here raises KeyboardInterrupt, so that what a command holds
    # is released (tracekit ingest defers it to a safe point instead);
    # SIGTERM still ends the process at once, with one line.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    leave_on_signals(signal.SIGTERM)
    quick = _quick(sys.argv[1:])
    if quick is None:
        from tracekit.cli.app import run_app

        run_app()
    else:
        try:
            quick()
        except TracekitError as exc:
            fail(exc)
        except KeyboardInterrupt:
            print("interrupted (SIGINT)", file=sys.stderr)
            sys.exit(130)
    if FAST_EXIT:
        exit_now(FAST_EXIT[-1])


def _quick(argv: list[str]) -> Callable[[], Any] | None:
    """The command a plain command line runs, without typer; None: typer parses it."""
    tree = quick_tree_args(argv)
    if tree is not None:  # typer's parse is slow
        return lambda: _print_tree(tree)
    fleet = quick_fleet_args(argv)
    if fleet is not None:
        return lambda: _print_fleet(fleet)
    find = quick_find_args(argv)
    if find is not None:
        return lambda: _print_find(find)
    return None


def _print_tree(args: dict[str, Any]) -> None:
    from tracekit.cli.tree import print_tree

    print_tree(**args)


def _print_fleet(args: dict[str, Any]) -> None:
    from tracekit.cli.fleet import print_fleet
    from tracekit.cli.quick import DEFAULT_WAIT
    from tracekit.fleet.options import FleetOptions

    window = {name: args.pop(name) for name in ("since", "service", "agent")}
    print_fleet(args.pop("db"), FleetOptions(**window), wait=DEFAULT_WAIT, **args)


def _print_find(args: dict[str, Any]) -> None:
    from tracekit.cli.find import print_find

    query = args.pop("query")
    print_find(query, **args)
