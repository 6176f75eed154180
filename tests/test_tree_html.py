"""The HTML tree: escaped names, collapsible structure, status colours, the circle."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from tracekit._util.theme import RECURSION_COLOR, STATUS_COLORS
from tracekit.events import Enter, ErrorInfo, Event, Exit, Node
from tracekit.intake import read_trace
from tracekit.tree import AgentStep, NodeStep, agent_tree
from tracekit.tree.html import tree_to_html

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
HOSTILE = "<script>alert(1)</script>"


class _Tags(HTMLParser):
    """Collects start tags and text, and checks that every tag closes in order."""

    VOID = frozenset({"br", "hr", "img", "meta"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.max_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)
            self.max_depth = max(self.max_depth, len(self.open))

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    assert parser.open == [], f"unclosed tags: {parser.open}"
    return parser


def _call(
    inv: str, run: str, parent: str, agent: str, t0: float, t1: float, **exit_: object
) -> list[Event]:
    return [
        Enter(ts=t0, invocationId=inv, runId=run, parentRunId=parent, agent=agent, node="delegate"),
        Exit(
            ts=t1,
            invocationId=inv,
            runId=run,
            parentRunId=parent,
            agent=agent,
            node="delegate",
            durationMs=t1 - t0,
            **exit_,  # type: ignore[arg-type]
        ),
    ]


def test_hostile_names_are_escaped_everywhere() -> None:
    events = [
        Node(ts=1, runId="r", id=HOSTILE),
        *_call("i1", "c1", "r", HOSTILE, 2, 9, status="error",
               error=ErrorInfo(code=HOSTILE, message=HOSTILE, cause=ErrorInfo(code=HOSTILE))),
        *_call("i2", "c2", "r", "a\x1b[31mred", 10, 11, status="refused",
               error=ErrorInfo(code="AGENT_RECURSION", chain=[HOSTILE, "b", HOSTILE])),
    ]  # fmt: skip
    html = tree_to_html(agent_tree(events), title=HOSTILE)
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\x1b" not in html and "a\\x1b[31mred" in html
    text = "".join(_parse(html).text)
    assert text.count(HOSTILE) >= 6  # title, node, agent, code, cause, circle (twice)


def test_invocations_with_steps_fold_with_details_and_summary() -> None:
    events = [
        Node(ts=1, runId="r", id="decide"),
        *_call("i1", "c1", "r", "sql", 2, 13, status="ok"),
        Node(ts=3, runId="c1", id="delegate/sql/write_query"),
        *_call("i2", "c2", "c1", "deep", 4, 5, status="ok"),
        Node(ts=4.5, runId="c2", id="x"),
    ]
    parsed = _parse(tree_to_html(agent_tree(events), open_depth=1))
    details = [attrs for tag, attrs in parsed.starts if tag == "details"]
    assert len(details) == 2  # sql and deep have steps of their own
    assert "open" in details[0] and "open" not in details[1]  # deeper ones start folded
    assert [tag for tag, _ in parsed.starts].count("summary") == 2
    text = "".join(parsed.text)
    assert "write_query" in text and "decide" in text and "11ms" in text
    assert not any(tag == "script" for tag, _ in parsed.starts)


def test_status_colours_follow_each_invocation() -> None:
    statuses = ["ok", "error", "refused", "cancelled", "pending"]
    events = [
        event
        for n, status in enumerate(statuses)
        for event in _call(f"i{n}", f"c{n}", "r", status, n * 10, n * 10 + 1, status=status)
    ]
    html = tree_to_html(agent_tree(events))
    for status in ("ok", "error", "refused", "cancelled", "pending"):
        badge = re.search(rf'class="tk-status tk-status-{status}" style="([^"]*)"', html)
        assert badge is not None, status
        assert STATUS_COLORS[status] in badge.group(1)
    assert len(set(STATUS_COLORS.values())) == len(STATUS_COLORS)


def test_running_invocation_is_marked_running() -> None:
    events = [Enter(ts=1, invocationId="i", runId="c", parentRunId="r", agent="sql")]
    html = tree_to_html(agent_tree(events))
    assert "tk-status-running" in html and STATUS_COLORS["running"] in html


def test_recursion_circle_is_shown_on_the_failing_invocation() -> None:
    result = read_trace(str(SAMPLES / "recursion_circle.jsonl"))
    html = tree_to_html(agent_tree(result.events))
    items = re.findall(r'<li class="tk-agent tk-leaf tk-refused".*?</li>', html)
    assert len(items) == 1
    assert "AGENT_RECURSION" in items[0] and RECURSION_COLOR in items[0]
    assert "circle: orders &rarr; billing &rarr; orders" in items[0]


def test_failing_branches_start_unfolded_and_show_the_origin_code() -> None:
    result = read_trace(str(SAMPLES / "child_failure.jsonl"))
    parsed = _parse(tree_to_html(agent_tree(result.events), open_depth=0))
    details = [attrs for tag, attrs in parsed.starts if tag == "details"]
    assert details and all("open" in attrs for attrs in details)
    text = "".join(parsed.text)
    assert "AGENT_FAILED" in text and "caused by REFUND_API_TIMEOUT" in text


def test_every_sample_renders_well_formed() -> None:
    for path in sorted(SAMPLES.glob("*.jsonl")):
        tree = agent_tree(read_trace(str(path)).events)
        _parse(tree_to_html(tree))


def test_deep_chain_renders_without_recursion_and_is_capped() -> None:
    depth = 3000
    tree: list[AgentStep | NodeStep] = []
    level = tree
    for n in range(depth):
        step = AgentStep(agent=f"a{n}", node="d", kind="delegate", runId=f"r{n}",
                         parentRunId=None, invocationId=f"i{n}", ok=True, status="ok",
                         durationMs=1.0, steps=[])  # fmt: skip
        level.append(step)
        level = step.steps
    html = tree_to_html(tree, max_depth=50)
    assert "deeper steps not shown" in html
    assert _parse(html).max_depth < 50 * 4 + 10
    capped = tree_to_html(tree, max_steps=10, max_depth=depth + 1)
    assert "2990 more steps not shown" in capped
    _parse(capped)


def test_empty_tree_says_so() -> None:
    assert "(no steps)" in tree_to_html([])
