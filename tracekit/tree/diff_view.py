"""A run comparison as text (``tracekit diff``) and as an HTML table (Jupyter).

One line a change, its sign first::

    diff: run r1 (front_desk, ok, 40ms) -> run r2 (front_desk, error, 95ms)
    4 changes: 1 added, 1 removed, 1 status, 1 slower (slower counts past +50% and +20ms)
    + billing/refunds: escalate -> refunds (error AGENT_FAILED, 5ms), 3 invocations
    - billing/sql[1]: delegate -> sql (ok, 11ms)
    ~ billing: ok -> error AGENT_FAILED
    > billing/sql[0]: 11ms -> 250ms (+239ms, x22.7)

Names in traces are data: escaped for the terminal (``\\x1b``), and for HTML too.

Example:
    >>> from tracekit.tree.diff import diff_steps
    >>> print(describe_diff(diff_steps([], [])))
    diff: run ? -> run ?
    no differences (no call slower past +50% and +20ms)
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Final, Protocol

from tracekit._util.text import escape, format_ms
from tracekit._util.theme import NEUTRAL, STATUS_COLORS

__all__ = [
    "ChangeLike",
    "DiffLike",
    "RunSideLike",
    "SideLike",
    "change_text",
    "describe_diff",
    "diff_to_html",
]


# What the views read. A diff (tracekit.tree.diff) prints itself with this
# module, so this module names only the fields it reads and never imports the
# diff's types: the two would import each other.
class SideLike(Protocol):
    """One run's side of a change (:class:`tracekit.tree.diff.Side`)."""

    @property
    def status(self) -> str: ...
    @property
    def durationMs(self) -> float | None: ...
    @property
    def errorCode(self) -> str | None: ...
    @property
    def why(self) -> str | None: ...


class ChangeLike(Protocol):
    """One difference (:class:`tracekit.tree.diff.Change`)."""

    @property
    def change(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def node(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def a(self) -> SideLike | None: ...
    @property
    def b(self) -> SideLike | None: ...
    @property
    def invocations(self) -> int: ...


class RunSideLike(Protocol):
    """What a compared run's header says (:class:`tracekit.tree.diff.RunSide`)."""

    @property
    def runId(self) -> str | None: ...
    @property
    def agent(self) -> str | None: ...
    @property
    def status(self) -> str | None: ...
    @property
    def durationMs(self) -> float | None: ...
    @property
    def source(self) -> str | None: ...


class DiffLike(Protocol):
    """Two runs compared (:class:`tracekit.tree.diff.RunDiff`); ``slower`` prints as its threshold."""

    @property
    def a(self) -> RunSideLike: ...
    @property
    def b(self) -> RunSideLike: ...
    @property
    def slower(self) -> object: ...
    @property
    def changes(self) -> Sequence[ChangeLike]: ...
    def counts(self) -> dict[str, int]:
        """How many changes of each kind."""


_SIGN: Final = {"added": "+", "removed": "-", "status": "~", "slower": ">"}
_ANSI: Final = {"added": "32", "removed": "31", "status": "33", "slower": "35"}
_HTML_COLOR: Final = {
    "added": "#1a7f37",
    "removed": "#cf222e",
    "status": "#9a6700",
    "slower": "#8250df",
}


def _paint(text: str, code: str | None, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color and code else text


def _status(side: SideLike) -> str:
    code = side.why or side.errorCode
    return side.status + (f" {escape(code)}" if code else "")


def _call(change: ChangeLike, side: SideLike) -> str:
    caller = escape(change.node.rpartition("/")[2]) + " " if change.node else ""
    details = [] if change.kind == "delegate" else [escape(change.kind)]
    details.append(_status(side))
    if side.durationMs is not None:
        details.append(format_ms(side.durationMs))
    return f"{caller}-> {escape(change.agent)} ({', '.join(details)})"


def change_text(change: ChangeLike) -> str:
    """What changed, without the path: the call, the two statuses, or the two durations.

    Example:
        >>> from tracekit.tree.diff import Change, Side
        >>> change_text(Change(change="slower", path="sql", agent="sql", node="delegate",
        ...     kind="delegate", a=Side(invocationId="i", status="ok", durationMs=10),
        ...     b=Side(invocationId="j", status="ok", durationMs=250)))
        '10ms -> 250ms (+240ms, x25.0)'
    """
    a, b = change.a, change.b
    if change.change == "added" and b is not None:
        many = f", {change.invocations} invocations" if change.invocations > 1 else ""
        return _call(change, b) + many
    if change.change == "removed" and a is not None:
        many = f", {change.invocations} invocations" if change.invocations > 1 else ""
        return _call(change, a) + many
    if a is None or b is None:
        return ""
    if change.change == "status":
        return f"{_status(a)} -> {_status(b)}"
    before, after = a.durationMs or 0.0, b.durationMs or 0.0
    times = f", x{after / before:.1f}" if before > 0 else ""
    return f"{format_ms(before)} -> {format_ms(after)} (+{format_ms(after - before)}{times})"


def _run(side: RunSideLike) -> str:
    bits = [escape(side.agent)] if side.agent else []
    if side.status:
        bits.append(side.status)
    if side.durationMs is not None:
        bits.append(format_ms(side.durationMs))
    run = f"run {escape(side.runId) if side.runId else '?'}"
    where = f" in {escape(side.source)}" if side.source else ""
    return run + where + (f" ({', '.join(bits)})" if bits else "")


def _counts(diff: DiffLike) -> str:
    counts = diff.counts()
    total = sum(counts.values())
    if not total:
        return f"no differences (no call slower past {diff.slower})"
    listed = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    return f"{total} change{'s' * (total != 1)}: {listed} (slower counts past {diff.slower})"


def describe_diff(diff: DiffLike, *, color: bool = False) -> str:
    """The comparison as text: a header, the counts, then one line a change."""
    lines = [f"diff: {_run(diff.a)} -> {_run(diff.b)}", _counts(diff)]
    for change in diff.changes:
        sign = _paint(_SIGN[change.change], _ANSI[change.change], color)
        lines.append(f"{sign} {escape(change.path)}: {change_text(change)}")
    return "\n".join(lines)


def _h(text: str) -> str:
    return html.escape(escape(text), quote=True)


def diff_to_html(diff: DiffLike) -> str:
    """The comparison as an HTML fragment: the header, the counts and a table of changes.

    Example:
        >>> from tracekit.tree.diff import RunSide, diff_steps
        >>> page = diff_to_html(diff_steps([], [], a_side=RunSide(runId="<b>")))
        >>> "&lt;b&gt;" in page and "<b>" not in page.replace("<b>diff", "")
        True
    """
    head = f"<b>diff</b>: {_h(_run(diff.a))} &rarr; {_h(_run(diff.b))}"
    rows = []
    for change in diff.changes:
        color = _HTML_COLOR[change.change]
        side = change.b if change.b is not None else change.a
        status = side.status if side is not None else ""
        badge = STATUS_COLORS.get(status, NEUTRAL)
        rows.append(
            f'<tr class="tk-{change.change}"><td style="color:{color};font-weight:600">'
            f"{_SIGN[change.change]} {change.change}</td>"
            f"<td><code>{_h(change.path)}</code></td>"
            f'<td><span style="border-left:4px solid {badge};padding-left:4px">'
            f"{_h(change_text(change))}</span></td></tr>"
        )
    table = (
        '<table class="tk-diff-table"><thead><tr><th>change</th><th>path</th><th>what</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else ""
    )
    return (
        '<div class="tracekit-diff" style="font-family:ui-monospace,Menlo,Consolas,monospace;'
        f'font-size:13px"><div>{head}</div><div>{_h(_counts(diff))}</div>{table}</div>'
    )
