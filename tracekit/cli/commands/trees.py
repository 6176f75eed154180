"""``tracekit tree`` and ``tracekit diff``: a run's delegation tree, two runs compared."""

from __future__ import annotations

from typing import Annotated

import typer

from tracekit.cli.commands.options import (
    ColorMode,
    ServerOption,
    ShownStep,
    TreeFormat,
    WaitOption,
    use_color_mode,
)
from tracekit.cli.output import print_view
from tracekit.cli.quick import DEFAULT_WAIT


def tree_command(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="FILE",
            help="A trace file (v1 JSONL or OTLP JSON, gzip or not), or - for stdin;"
            " with --db, a run id.",
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option(
            "--run", metavar="RUN_ID", help="Show only this run's tree (a root or any child run)."
        ),
    ] = None,
    format: Annotated[
        TreeFormat, typer.Option("--format", help="text (the tree) or json (the steps as data).")
    ] = TreeFormat.text,
    color: Annotated[
        ColorMode, typer.Option("--color", help="Colour the status words; auto honours NO_COLOR.")
    ] = ColorMode.auto,
    max_depth: Annotated[
        int | None,
        typer.Option(
            "--max-depth",
            min=0,
            metavar="N",
            help="Show steps down to this depth (0 is the top level).",
        ),
    ] = None,
    errors: Annotated[
        bool, typer.Option("--errors", help="Show only the paths that lead to a failure.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Any bad line is an error (exit code 2).")
    ] = False,
    show: Annotated[
        list[ShownStep] | None,
        typer.Option("--show", help="Also show these steps: llm (the model turns)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="STORE",
            help="Read the run from this store: the argument is then a RUN_ID.",
        ),
    ] = None,
    wait: WaitOption = DEFAULT_WAIT,
    fold: Annotated[
        bool | None,
        typer.Option(
            "--fold/--no-fold",
            help="Fold repeated sibling subtrees into one line with a count"
            " (default: only sibling lists longer than 20).",
        ),
    ] = None,
    expand: Annotated[
        list[str] | None,
        typer.Option(
            "--expand",
            metavar="PATH",
            help="Show a folded group's steps one by one. PATH: agent names joined by /,"
            " each with an optional [N] among same-named siblings (from 0): batch[2]/sql.",
        ),
    ] = None,
    server: ServerOption = None,
) -> None:
    """Print the delegation tree of a trace: who called whom, and what failed where.

    Bad lines are skipped (stderr says which) unless --strict; whatever was odd
    in the trace (orphans, cycles, duplicates, runs still open) is summed up on stderr.
    With --db, FILE is a run id (a root or a child run; or give it as --run) and its tree
    is read from the store, followed, for a run that did not end ok, by why: its outcome,
    its circle, where the failure began and its message.
    """
    shown = tuple(step.value for step in show or ())
    if db is not None or server is not None:
        from tracekit.cli.tree import store_tree_view

        if file is None and run is None:
            raise typer.BadParameter("give a RUN_ID (or --run RUN_ID) to read from the store")
        view = store_tree_view(
            db,
            file if file is not None else str(run),
            run=run if file is not None else None,
            fmt=format.value,
            max_depth=max_depth,
            errors_only=errors,
            color=use_color_mode(color),
            wait=wait,
            show=shown,
            fold=fold,
            expand=expand or (),
            server=server,
        )
        print_view(view.stdout, view.stderr)
        return
    from tracekit.cli.tree import print_tree

    if file is None:
        raise typer.BadParameter("give a trace FILE (or - for stdin; a RUN_ID with --db STORE)")
    print_tree(
        file, run, format.value, color.value, max_depth, errors, strict, shown, fold, expand or []
    )


def diff_command(
    run_a: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A",
            help="The run before: FILE, FILE#RUN_ID, or with --db a run id in the store.",
        ),
    ],
    run_b: Annotated[
        str | None,
        typer.Argument(metavar="RUN_B", help="The run after (the same forms as RUN_A)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", metavar="STORE", help="Read run ids (not files) from this store."),
    ] = None,
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            metavar="RUN_ID",
            help="The run of a file to compare: once for both sides, twice for A then B.",
        ),
    ] = None,
    slower: Annotated[
        str | None,
        typer.Option(
            "--slower",
            metavar="THRESHOLD",
            help="Report a call as slower past this: 50% or 200ms (default: +50% and +20ms).",
        ),
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    color: Annotated[
        ColorMode, typer.Option("--color", help="Colour the signs; auto honours NO_COLOR.")
    ] = ColorMode.auto,
    no_color: Annotated[bool, typer.Option("--no-color", help="Same as --color never.")] = False,
    against_fleet: Annotated[
        bool,
        typer.Option(
            "--against-fleet",
            help="Compare RUN_A with the other runs of its root agent in --db instead.",
        ),
    ] = False,
    rare: Annotated[
        str,
        typer.Option(
            "--rare", metavar="SHARE", help="With --against-fleet: rare below this share of runs."
        ),
    ] = "5%",
    wait: WaitOption = DEFAULT_WAIT,
) -> None:
    """Compare two runs: the calls added, removed, changed status or slower.

    The delegation trees are aligned by agent and caller node under the same
    path; among same-named siblings, the same shape pairs first, then order.
    With --against-fleet, list this run's calls that are rare for its root
    agent, and the usual ones it lacks.
    """
    from tracekit.cli.diff import against_fleet_view, diff_view

    fmt = "json" if json else "text"
    if against_fleet:
        if db is None or run_b is not None:
            raise typer.BadParameter("--against-fleet takes one RUN and --db STORE")
        print_view(against_fleet_view(run_a, db=db, rare_below=rare, fmt=fmt, wait=wait), [])
        return
    if run_b is None:
        raise typer.BadParameter("give two runs to compare (or --against-fleet --db STORE)")
    runs = list(run or [])
    if len(runs) > 2:
        raise typer.BadParameter("--run is given at most twice (A, then B)")
    sides = (runs[0], runs[-1]) if runs else (None, None)
    view = diff_view(
        run_a,
        run_b,
        db=db,
        runs=sides,
        slower=slower,
        fmt=fmt,
        color=not no_color and use_color_mode(color),
        wait=wait,
    )
    print_view(view.stdout, [])
