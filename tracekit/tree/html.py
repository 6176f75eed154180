"""Trees as HTML: a nested, collapsible view for Jupyter and static pages.

Each invocation with steps of its own is a ``<details>``/``<summary>`` pair,
so the view folds and unfolds without JavaScript, in Jupyter as in any
browser. Layout comes from one scoped ``<style>`` block; the colours that
carry meaning are inline styles, so they survive a front end that drops
``<style>``. A failing invocation shows its error code, the
origin of a wrapped failure (``caused by ...``) and, for a recursion
refusal, the circle. Branches that lead to a failure start unfolded.

Names in traces are data: every name is HTML-escaped, and control
characters are shown as escapes, exactly as the terminal tree shows them.

Example:
    >>> from tracekit.tree import AgentStep, NodeStep
    >>> step = AgentStep(agent="<b>sql</b>", node="delegate", kind="delegate", runId="c",
    ...                  parentRunId="r", invocationId="i", ok=True, status="ok",
    ...                  durationMs=11, steps=[NodeStep(id="say")])
    >>> html = tree_to_html([NodeStep(id="decide"), step])
    >>> "&lt;b&gt;sql&lt;/b&gt;" in html and "<details" in html
    True
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from typing import Final

from tracekit._util.text import escape, format_ms
from tracekit._util.theme import NEUTRAL, RECURSION_COLOR, STATUS_COLORS
from tracekit.events import ErrorInfo
from tracekit.tree.fold import FOLD_AT, needs_folding, opened_steps
from tracekit.tree.lazy_html import lazy_tree_html
from tracekit.tree.model import AgentStep, Step
from tracekit.tree.why import failure_origin

__all__ = ["tree_to_html"]


_FAILED: Final = frozenset({"error", "refused", "cancelled"})
_NO_DURATION: Final = frozenset({"refused", "running", "pending"})  # as the text tree
_STYLE: Final = (
    "<style>"
    ".tracekit-tree{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
    "font-size:13px;line-height:1.55;color:#1f2328}"
    ".tracekit-tree ul{list-style:none;margin:0;padding-left:0}"
    ".tracekit-tree ul ul{margin-left:0.45em;padding-left:1.1em;border-left:1px solid #d0d7de}"
    ".tracekit-tree li{margin:0}"
    ".tracekit-tree li.tk-node,.tracekit-tree li.tk-leaf,.tracekit-tree li.tk-more"
    "{padding-left:1.1em}"  # lines a leaf up with a summary's marker
    ".tracekit-tree .tk-node,.tracekit-tree .tk-kind,.tracekit-tree .tk-message{color:#57606a}"
    ".tracekit-tree .tk-more,.tracekit-tree .tk-empty{color:#6e7781;font-style:italic}"
    ".tracekit-tree summary{cursor:pointer}"
    ".tracekit-tree .tk-title{font-weight:600}"
    ".tracekit-tree .tk-status{color:#fff;border-radius:3px;padding:0 0.35em}"
    ".tracekit-tree .tk-code{font-weight:600}"
    ".tracekit-tree .tk-circle{border:1px solid;border-radius:3px;padding:0 0.3em}"
    "</style>"
)
_UL: Final = '<ul class="tk-steps">'
_MAX_MESSAGE: Final = 160
_NEVER: Final = 2**62  # a threshold no sibling list reaches: lazy, not folded


def tree_to_html(
    tree: Sequence[Step],
    *,
    title: str | None = None,
    open_depth: int = 2,
    max_steps: int = 5000,
    max_depth: int = 200,
    fold: bool | None = None,
    lazy: bool = False,
    expand: Sequence[str] = (),
) -> str:
    """Render one run's tree as a nested, collapsible HTML fragment.

    Args:
        tree: the run's steps (an ``AgentTree`` or any list of steps).
        title: an optional header line (escaped like every name).
        open_depth: invocations shallower than this start unfolded; those on
            the way to a failure always do.
        max_steps: at most this many steps are drawn; a last line says how
            many were left out (a notebook cell should stay light).
        max_depth: nesting stops here, with a note; browsers flatten HTML
            nested much deeper.
        fold: fold repeated sibling subtrees; None folds when a sibling list
            is longer than ``FOLD_AT``. A folded tree is drawn by
            :func:`tracekit.tree.lazy_html.lazy_tree_html`.
        lazy: draw with :func:`~tracekit.tree.lazy_html.lazy_tree_html`
            anyway (a huge run: lines are built on click).
        expand: paths of folded steps to show one by one (``batch[2]/sql``),
            as ``tracekit tree --expand``; the tree is then drawn folded.

    Raises:
        TracekitError: an ``expand`` path that names no step.

    Returns:
        A ``<div class="tracekit-tree">`` fragment, with no script unless
        folded or lazy.

    Example:
        >>> from tracekit.tree import NodeStep
        >>> tree_to_html([NodeStep(id="a<b")]).count("a&lt;b")
        1
    """
    if lazy or expand or (fold is not False and (fold or needs_folding(tree))):
        threshold = 0 if fold else FOLD_AT if fold is None else _NEVER
        opened = opened_steps(tree, expand)
        return lazy_tree_html(
            tree, title=title, threshold=threshold, opened=opened, open_depth=min(open_depth, 1)
        )
    failing = _failing_branches(tree)
    parts = ['<div class="tracekit-tree">', _STYLE]
    if title is not None:
        parts.append(f'<div class="tk-title">{_text(title)}</div>')
    if not tree:
        parts.append('<div class="tk-empty">(no steps)</div>')
    else:
        parts.append(_UL)
        _render(tree, parts, failing, open_depth, max_steps, max_depth)
    parts.append("</div>")
    return "".join(parts)


def _render(
    tree: Sequence[Step],
    parts: list[str],
    failing: set[int],
    open_depth: int,
    max_steps: int,
    max_depth: int,
) -> None:
    """Append the ``<li>`` items of ``tree`` without recursion (chains may be deep)."""
    stack: list[Iterator[Step]] = [iter(tree)]
    shown = 0
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            parts.append("</ul></details></li>" if stack else "</ul>")
            continue
        if shown == max_steps:
            left = _count(tree) - shown
            parts.append(_note(f"... {left} more steps not shown"))
            parts.append("</ul></details></li>" * (len(stack) - 1) + "</ul>")
            return
        if getattr(step, "call", None) == "llm":
            continue  # model turns are hidden, as in the text tree
        shown += 1
        if not isinstance(step, AgentStep):
            parts.append(_node_item(step))
        elif not step.steps:
            parts.append(_leaf_item(step))
        elif len(stack) > max_depth:
            parts.append(_leaf_item(step, note=f"{len(step.steps)} deeper steps not shown"))
        else:
            unfolded = len(stack) <= open_depth or id(step) in failing or step.status in _FAILED
            parts.append(_branch_open(step, unfolded))
            stack.append(iter(step.steps))


def _walk(tree: Sequence[Step]) -> Iterator[tuple[Step, list[AgentStep]]]:
    """Yield each step with its ancestors (the list is shared: read it at once)."""
    stack: list[Iterator[Step]] = [iter(tree)]
    owners: list[AgentStep] = []
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if owners:  # stack[i + 1] walks the steps of owners[i]
                owners.pop()
            continue
        yield step, owners
        if isinstance(step, AgentStep) and step.steps:
            owners.append(step)
            stack.append(iter(step.steps))


def _failing_branches(tree: Sequence[Step]) -> set[int]:
    """Ids of the invocations with a failure somewhere below them."""
    marked: set[int] = set()
    for step, owners in _walk(tree):
        if isinstance(step, AgentStep) and step.status in _FAILED:
            # Stop at the first marked owner: all above it are marked already.
            for owner in reversed(owners):
                if id(owner) in marked:
                    break
                marked.add(id(owner))
    return marked


def _count(tree: Sequence[Step]) -> int:
    return sum(1 for _ in _walk(tree))


def _text(value: object) -> str:
    return html.escape(escape(str(value)), quote=True)


def _note(text: str) -> str:
    return f'<li class="tk-more">{_text(text)}</li>'


def _node_item(step: Step) -> str:
    name = _text(step.id)  # type: ignore[union-attr]
    failed = getattr(step, "ok", None) is False
    error = getattr(step, "error", None)
    word = f"failed {_text(error.code)}" if error is not None else "failed"
    mark = f' <span style="color:{STATUS_COLORS["error"]}">({word})</span>' if failed else ""
    return f'<li class="tk-node">{name}{mark}</li>'


def _leaf_item(step: AgentStep, note: str | None = None) -> str:
    extra = f' <i class="tk-more">({_text(note)})</i>' if note else ""
    return f'<li class="tk-agent tk-leaf tk-{step.status}">{_summary(step)}{extra}</li>'


def _branch_open(step: AgentStep, unfolded: bool) -> str:
    attr = " open" if unfolded else ""
    return (
        f'<li class="tk-agent tk-{step.status}"><details{attr}>'
        f"<summary>{_summary(step)}</summary>{_UL}"
    )


def _summary(step: AgentStep) -> str:
    """``delegate -> sql`` then the status badge, kind, duration and error."""
    head = f'<b class="tk-agent-name">{_text(step.agent)}</b>'
    if step.node:  # a path such as delegate/sql/say shows its own name, as in the text tree
        node = step.node.rpartition("/")[2]
        head = f'<span class="tk-node-name" title="{_text(step.node)}">{_text(node)}</span> &rarr; {head}'
    bits = [head]
    if step.kind != "delegate":
        bits.append(f'<span class="tk-kind">[{_text(step.kind)}]</span>')
    bits.append(_badge(step.status))
    if step.durationMs is not None and step.status not in _NO_DURATION:
        bits.append(f'<span class="tk-duration">{_text(format_ms(step.durationMs))}</span>')
    if step.error is not None:
        bits.append(_error(step.error, step.steps))
    if step.mark:
        bits.append(f'<i class="tk-mark" style="color:#9a6700">({_text(step.mark)})</i>')
    return " ".join(bits)


def _badge(status: str) -> str:
    color = STATUS_COLORS.get(status, NEUTRAL)
    return (
        f'<span class="tk-status tk-status-{_text(status)}" style="background:{color}">'
        f"{_text(status)}</span>"
    )


def _error(error: ErrorInfo, steps: Sequence[Step] = ()) -> str:
    """The code, the circle if any, and where a wrapped failure began (code and agent)."""
    color = RECURSION_COLOR if error.chain else STATUS_COLORS["error"]
    tip = f' title="{_text(error.message)}"' if error.message else ""
    parts = [f'<span class="tk-code"{tip} style="color:{color}">{_text(error.code)}</span>']
    if error.chain:
        circle = " &rarr; ".join(_text(name) for name in error.chain)
        parts.append(
            f'<span class="tk-circle" style="color:{RECURSION_COLOR}">circle: {circle}</span>'
        )
    origin = _origin(error)
    below = failure_origin(error, steps) if steps else None
    if origin is not error or below is not None:
        where = f" in <b>{_text(below.agent)}</b>" if below is not None else ""
        if below is not None and below.error is not None:
            origin = _origin(below.error)
        parts.append(f'<span class="tk-cause">caused by <b>{_text(origin.code)}</b>{where}</span>')
    message = origin.message or error.message
    if message and not error.chain:  # a recursion message only repeats the circle
        short = message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
        parts.append(f'<span class="tk-message">{_text(short)}</span>')
    return " ".join(parts)


def _origin(error: ErrorInfo) -> ErrorInfo:
    while error.cause is not None:
        error = error.cause
    return error
