"""``tracekit tree``: a trace file's or a store run's tree, as text or JSON, with notes.

The file and the store take the same road: records, then
:func:`~tracekit.tree.build_forest`, then :meth:`~tracekit.tree.Forest.run`
for the run asked for, then the text renderers of :mod:`tracekit.tree.text`.
As text, a root run that did not end ok is followed by why, in the same
words (:func:`~tracekit.tree.outcome.describe_cause`): a file's from the
classification of its records (:func:`tracekit.failures.cause.run_causes`),
a store's from its rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from tracekit._util.files import is_store_file
from tracekit._util.gcpause import gc_paused
from tracekit._util.text import escape
from tracekit.errors import TracekitError
from tracekit.events import Event
from tracekit.intake import ReadResult, formats, read_trace
from tracekit.intake.otlp.dialect import Dialect, find_dialects
from tracekit.tree.build import build_forest
from tracekit.tree.forest import Forest, forest_to_json
from tracekit.tree.outcome import describe_cause, describe_causes
from tracekit.tree.text import describe_bad_lines, describe_forest, describe_integrity

__all__ = ["TreeView", "print_tree", "render_forest", "store_tree_view", "tree_view"]


class TreeView(NamedTuple):
    """What ``tracekit tree`` prints: the output, and the notes for stderr."""

    stdout: str
    stderr: list[str]


def print_tree(
    file: str,
    run: str | None,
    fmt: str,
    color: str,
    max_depth: int | None,
    errors: bool,
    strict: bool,
    show: tuple[str, ...] = (),
    fold: bool | None = None,
    expand: list[str] | None = None,
    dialect: tuple[str, ...] = (),
) -> None:
    """The tree of a trace file, printed: what ``tracekit tree FILE`` does, however parsed.

    ``dialect``: the ``--dialect`` files; none given, the working directory's
    own (``tracekit.toml``, ``[tool.tracekit]``).
    """

    from tracekit.cli.output import FAST_EXIT, HELD, print_view, use_color

    HELD.clear()  # only the last call's forest is held (CliRunner calls many times)
    view = tree_view(
        file,
        run_id=run,
        fmt=fmt,
        max_depth=max_depth,
        errors_only=errors,
        color=use_color(color),
        strict=strict,
        show=show,
        hold=HELD,  # freed by the process's end, not object by object
        fold=fold,
        expand=expand or (),
        dialects=find_dialects(dialect),
    )
    print_view(view.stdout, view.stderr)
    FAST_EXIT.append(0)


def render_forest(
    forest: Forest,
    *,
    run_id: str | None = None,
    fmt: str = "text",
    max_depth: int | None = None,
    errors_only: bool = False,
    color: bool = False,
    source: str = "the trace",
    show: tuple[str, ...] = (),
    fold: bool | None = None,
    expand: Sequence[str] = (),
) -> TreeView:
    """Render a forest as text or JSON, with its integrity report for stderr.

    Raises:
        RunNotFoundError: ``run_id`` is not a run of the forest.
    """
    runs = forest.runs if run_id is None else [forest.run(run_id, source=source)]
    if fmt == "json":
        text = forest_to_json(forest, runs).decode()
    else:
        text = describe_forest(
            forest,
            run_id=run_id,
            max_depth=max_depth,
            errors_only=errors_only,
            color=color,
            show=show,
            fold=fold,
            expand=expand,
        )
    return TreeView(text, describe_integrity(forest.integrity))


def tree_view(
    source: str,
    *,
    run_id: str | None = None,
    fmt: str = "text",
    max_depth: int | None = None,
    errors_only: bool = False,
    color: bool = False,
    strict: bool = False,
    show: tuple[str, ...] = (),
    hold: list[object] | None = None,
    fold: bool | None = None,
    expand: Sequence[str] = (),
    dialects: Sequence[Dialect] = (),
) -> TreeView:
    """Read a trace file and render its trees: the body of ``tracekit tree FILE``.

    Bad lines are skipped and summed up for stderr unless ``strict``.
    ``hold``, if given, receives the records and the forest, so that a caller
    about to end the process is not made to wait while they are freed here.

    Raises:
        TraceFileError: the file is missing, unreadable or not a trace.
        TracekitError: the file holds no trace record at all (empty, a saved
            tree, a pretty-printed document).
        TraceReadError: with ``strict``, the first bad line.
        RunNotFoundError: ``run_id`` is not in the file.
    """
    with gc_paused():  # a million acyclic records: collections would only walk them
        result = read_trace(source, strict=strict, dialects=dialects)
        if not result.events:
            if is_store_file(source):
                raise TracekitError(
                    f"{escape(source)} is a tracekit store, not a trace file",
                    hint=f"Read a run from it: tracekit tree RUN_ID --db {escape(source)}"
                    f" (tracekit runs --db {escape(source)} lists them)",
                )
            raise _no_records(source, result)
        forest = build_forest(result.events)
        view = render_forest(
            forest,
            run_id=run_id,
            fmt=fmt,
            max_depth=max_depth,
            errors_only=errors_only,
            color=color,
            source=source,
            show=show,
            fold=fold,
            expand=expand,
        )
        if fmt == "text":
            why = _file_why(forest, result.events, run_id)
            view = view._replace(stdout="\n".join([view.stdout, *why]))
    if hold is not None:
        hold.extend((result, forest))
    notes = describe_bad_lines(result.bad_lines, result.lines_read) + view.stderr
    if result.spans is not None:  # OTLP: where every span read went
        notes.append(result.spans.line())
        notes.extend(result.spans.notes())
    return TreeView(view.stdout, notes)


def _file_why(forest: Forest, events: Sequence[Event], run_id: str | None) -> list[str]:
    """Why the root runs shown ended as they did, in the words ``tree RUN --db`` uses.

    The store's classification (:mod:`tracekit.failures`) on the records read:
    the outcome, the circle, the origin and its message. With several trees
    shown, each run's lines are named by its id, in a block below them.
    """
    from tracekit.failures.cause import run_causes

    causes = run_causes(forest, events)
    if run_id is not None:
        return describe_causes([causes[run_id]] if run_id in causes else [])
    roots = [causes[run.runId] for run in forest.runs if run.runId in causes]
    if len(forest.runs) == 1 and forest.runs[0].kind == "root":
        return describe_causes(roots)
    lines = describe_causes(roots, named=True)
    return ["", *lines] if lines else []  # a block of its own below the trees


def _no_records(source: str, result: ReadResult) -> TracekitError:
    """One line on a file with nothing to draw: what it holds instead, as far as the lines tell."""
    first = result.bad_lines[0] if result.bad_lines else None
    if first is None and not result.lines_read:
        what = "it is empty" if source != "-" else "standard input was empty"
    elif first is None:
        what = f"its {result.lines_read} line(s) hold no record (OTLP without spans?)"
    elif first.text.strip() in ("{", "["):
        what = (
            f"one JSON document over {result.lines_read} lines (pretty-printed?),"
            " and a trace has one record a line"
        )
    elif '"runs"' in first.text and '"runId"' in first.text:
        what = "it holds trees (tracekit tree --format json), not the records they were drawn from"
    else:
        what = f"no line of {result.lines_read} is a record (line {first.line}: {first.reason})"
    return TracekitError(
        f"no trace records in {escape(source)}: {escape(what)}",
        hint=f"tracekit tree reads {formats.described()}: see docs/trace-format.md.",
    )


def store_tree_view(
    db: str | None,
    run_id: str,
    *,
    run: str | None = None,
    fmt: str = "text",
    max_depth: int | None = None,
    errors_only: bool = False,
    color: bool = False,
    wait: float = 0.0,
    show: tuple[str, ...] = (),
    fold: bool | None = None,
    expand: Sequence[str] = (),
    server: str | None = None,
) -> TreeView:
    """Read a run's tree from a store and render it: ``tracekit tree RUN --db``.

    ``run_id`` is a root run or a child run (whose subtree is shown, as from
    its file); ``run``, if given, is the run of that tree to show instead.
    ``wait`` is how long to wait for another process that writes the store.
    As text, a root run that did not end ok is followed by why, as its run
    page says it: the outcome, the circle, where the failure began and its message.

    Raises:
        RunNotFoundError: the store has no such run, or its tree has no run ``run``.
        StoreLockedError: still locked after ``wait`` seconds.
    """
    from tracekit.cli.remote import open_reader

    shown = run if run is not None else run_id
    with open_reader(db, server, wait) as store:
        events = store.events(run_id)
        cause = store.root_cause(shown) if fmt == "text" else None
    view = render_forest(
        build_forest(events),
        run_id=shown,
        fmt=fmt,
        max_depth=max_depth,
        errors_only=errors_only,
        color=color,
        source=f"{db if db is not None else server}:{run_id}",
        show=show,
        fold=fold,
        expand=expand,
    )
    why = describe_cause(cause) if cause is not None else []
    return TreeView("\n".join([view.stdout, *why]), view.stderr)
