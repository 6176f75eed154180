"""The page's tables: every row in the HTML, paged and sortable by a little inline script.

A table holds all its rows (without JavaScript they all show) and says how
many; the script shows them a page at a time and sorts on a click on a
header, by each cell's ``data-v`` (the raw number or text). A run id links
to the run's tree further down the page when that run is embedded there.
Every value from a trace is HTML-escaped.

Example:
    >>> import pandas as pd
    >>> text = table(pd.DataFrame({"run_id": ["r1"], "runs": [3]}),
    ...              [("run_id", "run", "run"), ("runs", "runs", "num")], "none", links={"r1": "run-0"})
    >>> 'href="#run-0"' in text and 'data-total="1"' in text
    True
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import pandas as pd

from tracekit._util.text import format_ms
from tracekit._util.theme import NEUTRAL, RECURSION_COLOR, STATUS_COLORS
from tracekit.dashboards.fleet_figures import label

__all__ = ["PAGE_ROWS", "SCRIPT", "Column", "cell_text", "table"]

#: Rows on one page of a table.
PAGE_ROWS: Final = 20
_HOVER: Final = (
    "<b>%{customdata[0]}</b><br>node: %{customdata[1]}<br>kind: %{customdata[2]}"
    "<br>status: %{customdata[3]}<br>start: %{base:.1f} ms<br>duration: %{customdata[4]}"
    "<br>error: %{customdata[5]}<extra></extra>"
)
_NUMERIC: Final = frozenset({"num", "pct", "ms"})

Column = tuple[str, str, str]  # (column, header, kind)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def cell_text(value: Any) -> str:
    """A value as escaped HTML text ('-' for nothing, times to the minute)."""
    if _missing(value):
        return "-"
    if isinstance(value, (pd.Timestamp, datetime)):
        return html.escape(value.strftime("%Y-%m-%d %H:%M"))
    return label(value)


def _sort_key(value: Any, kind: str) -> str:
    if _missing(value):
        return ""
    if kind in _NUMERIC:
        return repr(float(value))
    if isinstance(value, (pd.Timestamp, datetime)):
        return value.isoformat()
    return label(value)  # control characters shown escaped, quotes too: an attribute


def _cell(value: Any, kind: str, links: Mapping[str, str]) -> str:
    if kind == "num":
        shown = "-" if _missing(value) else f"{int(value):,}"
    elif kind == "pct":
        shown = "-" if _missing(value) else f"{100 * float(value):.1f}%"
    elif kind == "ms":
        shown = "-" if _missing(value) else format_ms(float(value))
    elif kind == "circle":
        shown = f'<span class="circle">{cell_text(value)}</span>'
    elif kind == "act":
        shown = f'<span class="badge{" new" if value is True else ""}">ACT{" · NEW" if value is True else ""}</span>'
    elif kind == "run" and isinstance(value, str) and value in links:
        shown = f'<a class="run" href="{_href(links[value])}"><code>{cell_text(value)}</code></a>'
    else:
        shown = f"<code>{cell_text(value)}</code>" if kind == "run" else cell_text(value)
    css = ' class="num"' if kind in _NUMERIC else ""
    return f'<td{css} data-v="{_sort_key(value, kind)}">{shown}</td>'


def _href(link: str) -> str:
    """An element id on this page (``#run-3``), or a page of the server's (``/runs/...``)."""
    return html.escape(link if link.startswith("/") else f"#{link}")


def table(
    frame: pd.DataFrame,
    columns: list[Column],
    empty: str,
    *,
    links: Mapping[str, str] | None = None,
    name: str = "",
) -> str:
    """Every row of ``frame`` as a table; kind is text, num, pct, ms, circle, act or run.

    Args:
        frame: the rows, in the order to show first.
        columns: (column, header, kind) for each column shown.
        empty: the sentence shown instead of an empty table.
        links: run id to the id of its element on the page, or to a path
            starting with ``/`` (kind ``run``).
        name: what a row is, for the count above the table ("12 degraded runs").
    """
    if frame.empty:
        return f'<p class="empty">{html.escape(empty)}</p>'
    links = links or {}
    head = "".join(
        f'<th class="{"num" if k in _NUMERIC else ""}" data-kind="{"n" if k in _NUMERIC else "t"}">'
        f"{html.escape(h)}</th>"
        for _, h, k in columns
    )
    body = "".join(
        "<tr>" + "".join(_cell(row.get(c), k, links) for c, _, k in columns) + "</tr>"
        for row in frame.to_dict(orient="records")
    )
    total = len(frame)
    count = f"{total:,} {html.escape(name or 'rows')}" if name else f"{total:,} rows"
    return (
        f'<div class="tk-table" data-total="{total}" data-page="{PAGE_ROWS}">'
        f'<p class="count">{count}</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        '<p class="pager"></p></div>'
    )


# Pages and sorts every ``.tk-table``; opens an embedded run when its link is followed and
# draws its calls (a tree and a timeline) from its JSON rows.
_SCRIPT: Final = """
(function(){
function setup(box){
  var size=+box.dataset.page, body=box.querySelector('tbody'), pager=box.querySelector('.pager');
  var rows=[].slice.call(body.rows), page=0, pages=Math.max(1,Math.ceil(rows.length/size));
  function show(){
    rows.forEach(function(r,i){r.style.display=(Math.floor(i/size)===page)?'':'none';});
    if(rows.length<=size){pager.textContent='';return;}
    pager.innerHTML='';
    var first=page*size+1, last=Math.min(rows.length,(page+1)*size);
    function btn(text,to,off){var b=document.createElement('button');b.textContent=text;
      b.disabled=off;b.onclick=function(){page=to;show();};pager.appendChild(b);}
    btn('\\u2039 previous',page-1,page===0);
    pager.appendChild(document.createTextNode(' rows '+first+'\\u2013'+last+' of '+rows.length+' '));
    btn('next \\u203a',page+1,page>=pages-1);
  }
  [].forEach.call(box.querySelectorAll('th'),function(th,col){
    th.title='sort';th.onclick=function(){
      var up=th.dataset.dir!=='asc', num=th.dataset.kind==='n';
      [].forEach.call(box.querySelectorAll('th'),function(o){delete o.dataset.dir;});
      th.dataset.dir=up?'asc':'desc';
      rows.sort(function(a,b){
        var x=a.cells[col].dataset.v, y=b.cells[col].dataset.v, c;
        if(num){c=(x===''?-Infinity:+x)-(y===''?-Infinity:+y);}else{c=x<y?-1:x>y?1:0;}
        return up?c:-c;});
      rows.forEach(function(r){body.appendChild(r);});page=0;show();};
  });
  show();
}
function openRun(){
  var id=decodeURIComponent(location.hash.slice(1)), el=id&&document.getElementById(id);
  if(el&&el.tagName==='DETAILS'){el.open=true;el.scrollIntoView();}
}
function esc(t){return String(t).replace(/&/g,'&amp;').replace(/</g,'&lt;').replace(/>/g,'&gt;');}
function order(rows){
  var kids={}, out=[], stack=[{list:null,i:0,d:0}];
  rows.forEach(function(r,i){(kids[r[0]]||(kids[r[0]]=[])).push(i);});
  stack[0].list=kids[-1]||[];
  while(stack.length){var top=stack[stack.length-1];
    if(top.i>=top.list.length){stack.pop();continue;}
    var n=top.list[top.i++];out.push([n,top.d]);stack.push({list:kids[n]||[],i:0,d:top.d+1});}
  return out;
}
function ms(v){return v===null?'':v.toFixed(1)+' ms';}
function shade(r){return r[8]==='AGENT_RECURSION'?'recursion':r[4];}
function tree(box,rows,seq){
  var ul=document.createElement('ul');ul.className='tracekit-tree tk-calls-tree';
  seq.forEach(function(p){var r=rows[p[0]],li=document.createElement('li'),s=document.createElement('span');
    li.style.paddingLeft=(1.2*p[1])+'em';
    li.appendChild(document.createTextNode((p[1]?'\u2514 ':'')+(r[2]!==null?r[2]+' \u2192 ':'')+r[1]+' '));
    s.className='tk-status';s.style.background=COLORS[shade(r)]||NEUTRAL;s.textContent=r[4];li.appendChild(s);
    li.appendChild(document.createTextNode(' '+ms(r[7])+(r[8]!==null?' '+r[8]:'')));ul.appendChild(li);});
  box.appendChild(ul);
}
function timeline(box,rows,seq){
  var t0=Infinity,last=-Infinity,traces={},names=[],notes=[],wide=0;
  rows.forEach(function(r){if(r[5]!==null){t0=Math.min(t0,r[5]);last=Math.max(last,r[5]);}
    if(r[6]!==null)last=Math.max(last,r[6]);});
  if(t0===Infinity){t0=0;last=0;}
  var sliver=Math.max(last-t0,1)*0.006;
  seq.forEach(function(p,y){var r=rows[p[0]],k=shade(r),start=r[5]===null?t0:r[5],end=r[6]===null?last:r[6];
    var t=traces[k];if(!t){t=traces[k]={type:'bar',orientation:'h',name:k,y:[],base:[],x:[],customdata:[],
      marker:{color:COLORS[k]||NEUTRAL,line:{width:0}},hovertemplate:HOVER};names.push(k);}
    t.y.push(y);t.base.push(start-t0);t.x.push(Math.max(end-start,sliver));
    t.customdata.push([esc(r[1]),esc(r[2]||''),r[3],r[4],r[7]===null?'-':ms(r[7]),esc(r[8]||'')]);
    wide=Math.max(wide,p[1]*14+r[1].length*7);
    if(seq.length<=300)notes.push({xref:'paper',yref:'y',x:0,y:y,xanchor:'left',showarrow:false,align:'left',
      text:(p[1]?'\u2514 ':'')+esc(r[1])});});
  var margin=Math.min(320,24+wide);
  notes.forEach(function(a,y){a.xshift=-margin+6+seq[y][1]*14;});
  var layout={barmode:'overlay',bargap:0.25,height:Math.min(900,Math.max(300,140+28*seq.length)),
    plot_bgcolor:'#fff',legend:{title:{text:'status'}},annotations:notes,margin:{l:margin},
    xaxis:{title:{text:"ms since the run's first invocation"},gridcolor:'#eaeef2'},
    yaxis:{autorange:'reversed',showticklabels:false}};
  Plotly.newPlot(box,names.map(function(k){return traces[k];}),layout,{displaylogo:false,responsive:true});
}
function draw(d){
  var box=d.querySelector('.timeline'), spec=d.querySelector('script.tk-spec');
  if(!d.open||!box||!spec||box.dataset.drawn||!window.Plotly)return;
  var rows=JSON.parse(spec.textContent).rows, seq=order(rows);box.dataset.drawn='1';
  tree(d.querySelector('.tk-calls'),rows,seq);timeline(box,rows,seq);
}
function setupAll(root){
  [].forEach.call(root.querySelectorAll('.tk-table'),setup);
  [].forEach.call(root.querySelectorAll('details.tk-run'),function(d){
    d.addEventListener('toggle',function(){draw(d);});});
}
window.tkSetup=setupAll;setupAll(document);
window.addEventListener('hashchange',openRun);openRun();
})();
"""
SCRIPT: Final = (
    _SCRIPT.replace("COLORS", json.dumps({**STATUS_COLORS, "recursion": RECURSION_COLOR}))
    .replace("NEUTRAL", json.dumps(NEUTRAL))
    .replace("HOVER", json.dumps(_HOVER))
)
