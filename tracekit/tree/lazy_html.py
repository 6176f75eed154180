"""A huge tree as HTML that a browser opens at once: folded, and built on click.

The page carries the folded tree (:mod:`tracekit.tree.fold`) as compact JSON,
one row a line: ``[parent, node, agent, kind, status, detail]`` (``agent``
is null for a node step; rows come in pre-order, so a parent comes before its
children). A small script draws the top level; clicking a line builds its
children, and clicking again removes them, so only what is open is in the
DOM. A line with very many children shows them a page at a time.

Names in traces are data: they are escaped for control characters here and
set with ``textContent`` by the script, so no name is ever read as markup;
the JSON cannot close its ``<script>`` (no raw ``<``, ``>`` or ``&``).

Example:
    >>> from tracekit.tree.model import NodeStep
    >>> page = lazy_tree_html([NodeStep("<b>")] * 30)
    >>> '"\\\\u003cb\\\\u003e"' in page and "<b>" not in page
    True
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from tracekit._util.text import escape, format_ms
from tracekit._util.theme import NEUTRAL, STATUS_COLORS
from tracekit.tree.fold import FOLD_AT, Folder, Group, status_counts, status_summary
from tracekit.tree.model import NodeStep, Step

__all__ = ["lazy_tree_html"]

_NO_DURATION: Final = frozenset({"refused", "running", "pending"})
_PAGE: Final = 500  # children drawn per click on a line with more
_IDS: Final = itertools.count()
_STYLE: Final = (
    "<style>"
    ".tk-lazy{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
    "font-size:13px;line-height:1.55;color:#1f2328}"
    ".tk-lazy ul{list-style:none;margin:0;padding-left:0}"
    ".tk-lazy ul ul{margin-left:0.45em;padding-left:1.1em;border-left:1px solid #d0d7de}"
    ".tk-lazy .tk-row{cursor:default}.tk-lazy .tk-has>.tk-row{cursor:pointer}"
    ".tk-lazy .tk-twist{display:inline-block;width:1.1em;color:#57606a}"
    ".tk-lazy .tk-node,.tk-lazy .tk-kind{color:#57606a}"
    ".tk-lazy .tk-detail,.tk-lazy .tk-more{color:#6e7781}"
    ".tk-lazy .tk-status{color:#fff;border-radius:3px;padding:0 0.35em}"
    ".tk-lazy .tk-title{font-weight:600}"
    ".tk-lazy button{font:inherit;cursor:pointer}"
    "</style>"
)
# Builds lines from the rows; one copy a tree, guarded so a page of many trees works.
_SCRIPT: Final = """(function(){
var root=document.getElementById(%(id)s);if(!root||root.dataset.ready)return;root.dataset.ready='1';
var data=JSON.parse(root.querySelector('script.tk-data').textContent),rows=data.rows,kids={},colors=data.colors;
for(var i=0;i<rows.length;i++){var p=rows[i][0];(kids[p]||(kids[p]=[])).push(i);}
function span(cls,text){var s=document.createElement('span');s.className=cls;s.textContent=text;return s;}
function line(i){var r=rows[i],li=document.createElement('li'),row=document.createElement('span');
row.className='tk-row';li.appendChild(row);li.dataset.i=i;
var has=kids[i]!==undefined;row.appendChild(span('tk-twist',has?'\\u25b8':''));if(has)li.className='tk-has';
if(r[2]===null){row.appendChild(span('tk-name',r[1]));}else{
if(r[1]!==null){row.appendChild(span('tk-node',r[1]));row.appendChild(document.createTextNode(' \\u2192 '));}
var b=document.createElement('b');b.className='tk-agent-name';b.textContent=r[2];row.appendChild(b);
if(r[3]!==null)row.appendChild(span('tk-kind',' ['+r[3]+']'));}
if(r[4]!=='ok'||r[2]!==null){var s=span('tk-status tk-status-'+r[4],r[4]);s.style.background=colors[r[4]]||colors['?'];
row.appendChild(document.createTextNode(' '));row.appendChild(s);}
if(r[5])row.appendChild(span('tk-detail',' '+r[5]));return li;}
function fill(ul,list,from){var end=Math.min(list.length,from+%(page)d);
for(var k=from;k<end;k++)ul.appendChild(line(list[k]));
if(end<list.length){var li=document.createElement('li'),btn=document.createElement('button');
btn.textContent='show more ('+(list.length-end)+' left)';btn.className='tk-page';
btn.onclick=function(e){e.stopPropagation();li.remove();fill(ul,list,end);};li.className='tk-more';li.appendChild(btn);ul.appendChild(li);}}
function toggle(li){var open=li.querySelector(':scope>ul');var t=li.querySelector(':scope>.tk-row>.tk-twist');
if(open){open.remove();t.textContent='\\u25b8';return;}
var ul=document.createElement('ul');fill(ul,kids[+li.dataset.i],0);li.appendChild(ul);t.textContent='\\u25be';}
root.addEventListener('click',function(e){var row=e.target.closest('.tk-row');
if(!row||!root.contains(row))return;var li=row.parentNode;if(kids[+li.dataset.i]!==undefined)toggle(li);});
var top=document.createElement('ul');top.className='tk-steps';fill(top,kids[-1]||[],0);root.appendChild(top);
var depth=%(open)d,level=[].slice.call(top.children);
while(depth-->0){var next=[];level.forEach(function(li){if(li.className==='tk-has'){toggle(li);
next=next.concat([].slice.call(li.querySelector(':scope>ul').children));}});level=next;}
})();"""
_ENCODER: Final = msgspec.json.Encoder()


def _json_for_script(data: bytes) -> str:
    """JSON that cannot close its ``<script>`` or open a comment."""
    text = data.decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _detail(group: Group) -> tuple[str, str]:
    """The line's main status, and what follows its badge."""
    if len(group.steps) > 1:
        main, rest = status_summary(status_counts(group.steps))
        times = f"x{group.repeat}" if group.repeat > 1 else f"{len(group.steps)} in all"
        if group.repeat > 1 and len(group.steps) != group.repeat:
            times += f" ({len(group.steps)} in all)"
        return main, times + rest
    step = group.first
    if type(step) is NodeStep:
        return ("error" if step.ok is False else "ok"), ""
    bits = []
    if step.durationMs is not None and step.status not in _NO_DURATION:  # type: ignore[union-attr]
        bits.append(format_ms(step.durationMs))
    error = step.error
    if error is not None:
        bits.append(
            escape(error.code)
            + (": " + " -> ".join(map(escape, error.chain)) if error.chain else "")
        )
    if step.mark:  # type: ignore[union-attr]
        bits.append(f"({escape(step.mark)})")  # type: ignore[union-attr]
    return step.status, " ".join(bits)  # type: ignore[union-attr]


def _row(parent: int, group: Group) -> list[Any]:
    status, detail = _detail(group)
    step = group.first
    if type(step) is NodeStep:
        return [parent, escape(step.id), None, None, status, detail]
    node = escape(step.node.rpartition("/")[2]) if step.node else None  # type: ignore[union-attr]
    kind = None if step.kind == "delegate" else escape(step.kind)  # type: ignore[union-attr]
    return [parent, node, escape(step.agent), kind, status, detail]  # type: ignore[union-attr]


def lazy_rows(folder: Folder, tree: Sequence[Step], max_lines: int) -> tuple[list[list[Any]], bool]:
    """The folded tree's lines as rows, in pre-order; True if cut at ``max_lines``."""
    rows: list[list[Any]] = []
    parents: list[int] = []  # the last row at each depth
    for depth, group in folder.walk(tree):
        if len(rows) >= max_lines:
            return rows, True
        del parents[depth:]
        rows.append(_row(parents[-1] if parents else -1, group))
        parents.append(len(rows) - 1)
    return rows, False


def lazy_tree_html(
    tree: Sequence[Step],
    *,
    title: str | None = None,
    threshold: int = FOLD_AT,
    opened: set[int] | None = None,
    open_depth: int = 1,
    max_lines: int = 200_000,
) -> str:
    """Render a tree folded, as a fragment that builds its lines on click.

    Args:
        tree: the run's steps.
        title: an optional header line (escaped).
        threshold: sibling lists longer than this fold (0: every repeat).
        opened: ``id()`` of steps shown on their own (:func:`tracekit.tree.fold.opened_steps`).
        open_depth: levels open when the page loads.
        max_lines: at most this many folded lines travel with the page; a
            note says when the tree had more.
    """
    rows, cut = lazy_rows(Folder(threshold, opened), tree, max_lines)
    element = f"tk-lazy-{next(_IDS)}-{id(tree):x}"
    colors = {**STATUS_COLORS, "?": NEUTRAL}
    data = _json_for_script(_ENCODER.encode({"rows": rows, "colors": colors}))
    parts = [f'<div class="tracekit-tree tk-lazy" id="{element}">', _STYLE]
    if title is not None:
        parts.append(f'<div class="tk-title">{_html(title)}</div>')
    if cut:
        parts.append(
            f'<div class="tk-more">the first {max_lines:,} folded lines;'
            " <code>tracekit tree</code> prints them all</div>"
        )
    if not rows:
        parts.append('<div class="tk-empty">(no steps)</div>')
    parts.append(f'<script type="application/json" class="tk-data">{data}</script>')
    script = _SCRIPT % {"id": f'"{element}"', "page": _PAGE, "open": open_depth}
    parts.append(f"<script>{script}</script></div>")
    return "".join(parts)


def _html(text: str) -> str:
    import html

    return html.escape(escape(text), quote=True)
