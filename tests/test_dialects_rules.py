"""The general evidence rules, each checked as a property over recordings or generated traces.

Control flow is not failure; an AGENT span that does no agent work is a step;
with no agent span a model-and-tools loop is an agent; the innermost failed
span is the step that failed; handoff markers of any dialect are followed; an
app that raised after the last agent of its handoff chain failed fails the run.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from frameworks.known_gaps import INVOCATIONS, KNOWN_GAPS, Gap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit.failures import classify_events
from tracekit.intake.otlp.convert import OtlpConverter
from tracekit.intake.otlp.decode_json import decode_spans, hex_id
from tracekit.intake.otlp.dialects import tables
from tracekit.intake.otlp.spans import SpanIndex
from tracekit.store import Store
from tracekit.tree import AgentStep, NodeStep, RunTree, build_forest

RECORDINGS = Path(__file__).parent / "frameworks" / "recordings"
FILES = sorted(RECORDINGS.glob("*/*.otlp.json"))
# A recording tracekit is known to read wrong (frameworks/known_gaps.py) is no baseline.
OK_FILES = [
    p for p in FILES
    if json.loads(p.with_name(p.name.replace(".otlp.json", ".expected.json")).read_text())["run_ok"]
    and INVOCATIONS not in KNOWN_GAPS.get(f"{p.parent.name}/{p.name.removesuffix('.otlp.json')}", Gap("")).tests
]  # fmt: skip
DOCS = {p: [json.loads(line) for line in p.read_text().splitlines() if line.strip()] for p in FILES}
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def root_of(docs: list[dict[str, Any]]) -> RunTree:
    converter = OtlpConverter()
    for doc in docs:
        converter.feed(doc)
    [run] = [r for r in build_forest(converter.finish()).runs if r.kind == "root"]
    return run


def agents_of(run: RunTree) -> list[tuple[str, str | None, bool]]:
    """Every invocation as (agent, caller, ok), sorted."""
    out = [(run.agent, None, bool(run.ok))]
    stack = [(s, run.agent) for s in run.steps if isinstance(s, AgentStep)]
    while stack:
        step, caller = stack.pop()
        out.append((step.agent, caller, bool(step.ok)))
        stack.extend((s, step.agent) for s in step.steps if isinstance(s, AgentStep))
    return sorted(out, key=json.dumps)


def raw_spans(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        span
        for doc in docs
        for rs in doc["resourceSpans"]
        for ss in rs.get("scopeSpans", [])
        for span in ss["spans"]
    ]


def failed(span: dict[str, Any]) -> bool:
    raised = any(e.get("name") == "exception" for e in span.get("events", ()))
    return raised or span.get("status", {}).get("code") == 2


def string(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


# -- control flow is not failure ------------------------------------------------
@SETTINGS
@given(data=st.data())
def test_a_control_flow_exception_on_any_span_never_fails_a_run(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(OK_FILES), label="recording")
    docs = copy.deepcopy(DOCS[path])
    before = agents_of(root_of(copy.deepcopy(docs)))
    # a span that did not fail: the control-flow exception is the only one it raised
    spans = [s for s in raw_spans(docs) if not failed(s)]
    span = spans[data.draw(st.integers(0, len(spans) - 1), label="span")]
    kind = data.draw(st.sampled_from(sorted(tables().control_flow)), label="exception")
    span["status"] = {"code": 2, "message": f"{kind}(goto=billing)"}
    span.setdefault("attributes", []).append(string("error.type", kind))
    event = {"name": "exception", "attributes": [string("exception.type", kind)]}
    span["events"] = [*span.get("events", []), event]
    run = root_of(docs)
    assert run.ok
    assert agents_of(run) == before


# -- an AGENT span that does no agent work is a step ------------------------------
@SETTINGS
@given(data=st.data())
def test_a_childless_agent_span_under_an_agent_is_a_tool_step(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(OK_FILES), label="recording")
    docs = copy.deepcopy(DOCS[path])
    run = root_of(copy.deepcopy(docs))
    before = agents_of(run)
    spans = raw_spans(docs)
    decoded = {(s.trace, s.id): s for doc in copy.deepcopy(docs) for s in decode_spans(doc)}
    index = SpanIndex(decoded)
    agents = {key[1] for key in index.agent_set if not index.is_root(key)}
    owner = data.draw(
        st.sampled_from([s for s in spans if hex_id(s["spanId"]) in agents]), label="agent"
    )
    ends = int(owner["endTimeUnixNano"])
    spans.append(
        {
            "traceId": owner["traceId"],
            "spanId": "fa11fa11fa11fa11",
            "parentSpanId": owner["spanId"],
            "name": "final_answer",
            "startTimeUnixNano": str(ends - 2),
            "endTimeUnixNano": str(ends - 1),
            "attributes": [string("openinference.span.kind", "AGENT")],
        }
    )
    docs[0]["resourceSpans"][0]["scopeSpans"][0]["spans"].append(spans[-1])
    assert agents_of(root_of(docs)) == before


# -- with no agent span, a model-and-tools loop is an agent ------------------------
@st.composite
def modules(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """A module that loops: model calls and tools, perhaps a module run inside a tool."""
    tools = draw(st.lists(st.sampled_from(["lookup", "search", "charge"]), min_size=1, max_size=3))
    inner = draw(st.none() | modules(depth + 1)) if depth < 2 else None  # type: ignore[call-arg]
    return {"tools": tools, "inner": inner}


def depth_of(module: dict[str, Any]) -> int:
    return 0 if module["inner"] is None else 1 + depth_of(module["inner"])


def loop_trace(module: dict[str, Any], agent_kind: bool) -> list[dict[str, Any]]:
    """The spans of a module tree: ``<Name>.forward`` spans, model calls, tool calls."""
    spans: list[dict[str, Any]] = []
    clock = [1_000_000]

    def tick() -> str:
        clock[0] += 1000
        return str(clock[0])

    def emit(name: str, parent: str, attrs: list[dict[str, Any]], body: Any = None) -> str:
        span_id = f"{len(spans) + 1:016x}"
        span: dict[str, Any] = {"traceId": "ab" * 16, "spanId": span_id, "parentSpanId": parent,
                                "name": name, "startTimeUnixNano": tick(), "attributes": attrs}  # fmt: skip
        spans.append(span)
        if body is not None:
            body(span_id)
        span["endTimeUnixNano"] = tick()
        return span_id

    chat = [string("gen_ai.operation.name", "chat")]

    def run_module(mod: dict[str, Any], parent: str, n: int) -> None:
        kind = [string("openinference.span.kind", "AGENT")] if agent_kind else []

        def body(me: str) -> None:
            for tool in mod["tools"]:
                emit("chat", me, chat)
                emit(f"execute_tool {tool}", me, [string("gen_ai.tool.name", tool)])
            if mod["inner"] is not None:
                tool = [string("gen_ai.tool.name", f"ask_m{n + 1}")]
                emit(f"execute_tool ask_m{n + 1}", me, tool,
                     lambda t: run_module(mod["inner"], t, n + 1))  # fmt: skip
            emit("chat", me, chat)

        emit(f"M{n}.forward", parent, kind, body)

    emit("main", "", [], lambda me: run_module(module, me, 0))
    return [{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}]


@SETTINGS
@given(module=modules())
def test_removing_every_agent_kind_leaves_the_agents_the_loop_rule_finds(module: Any) -> None:
    marked = root_of(loop_trace(module, agent_kind=True))
    bare = root_of(loop_trace(module, agent_kind=False))
    names = {agent for agent, _, _ in agents_of(marked)}
    assert len(names) == 1 + depth_of(module)
    found = agents_of(bare)
    assert {agent for agent, _, _ in found} == {n.removesuffix(".forward") for n in names}
    assert [(a, c) for a, c, _ in found] == [
        (a.removesuffix(".forward"), c and c.removesuffix(".forward"))
        for a, c, _ in agents_of(marked)
    ]


# -- the innermost failed span is the step that failed ----------------------------
def test_a_tool_that_raised_inside_a_plain_step_gives_the_origin_code(tmp_path: Path) -> None:
    spans = [
        {"spanId": "a1", "parentSpanId": "", "name": "invoke_agent desk",
         "attributes": [string("gen_ai.operation.name", "invoke_agent"), string("gen_ai.agent.name", "desk")]},
        {"spanId": "b1", "parentSpanId": "a1", "name": "handle order",
         "status": {"code": 2, "message": "failed"}},
        {"spanId": "c1", "parentSpanId": "b1", "name": "execute_tool charge_card",
         "attributes": [string("gen_ai.operation.name", "execute_tool")], "status": {"code": 2},
         "events": [{"name": "exception", "attributes": [string("exception.type", "CardDeclined")]}]},
    ]  # fmt: skip
    for n, span in enumerate(spans):
        span.update(
            traceId="cd" * 16, startTimeUnixNano=str(1000 + n), endTimeUnixNano=str(9000 - n)
        )
        span["spanId"] = span["spanId"].rjust(16, "0")
        span["parentSpanId"] = span["parentSpanId"].rjust(16, "0") if span["parentSpanId"] else ""
    path = tmp_path / "run.otlp.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(path)
        row = store.con.execute("SELECT outcome, origin_code, origin_step FROM runs").fetchone()
    assert row == ("degraded", "CardDeclined", "handle order")


# -- handoff markers of any dialect ---------------------------------------------
def swarm(goto: bool) -> list[dict[str, Any]]:
    """A swarm as OpenLLMetry writes it: the handoff is an error (ParentCommand) with a goto."""
    spans: list[dict[str, Any]] = []

    def add(span_id: str, parent: str, name: str, start: int, end: int, attrs: dict[str, str],
            error: str | None = None) -> None:  # fmt: skip
        span = {"traceId": "ef" * 16, "spanId": span_id.rjust(16, "0"),
                "parentSpanId": parent.rjust(16, "0") if parent else "", "name": name,
                "startTimeUnixNano": str(start + 10**6), "endTimeUnixNano": str(end + 10**6),
                "attributes": [string(k, v) for k, v in attrs.items()]}  # fmt: skip
        if error:
            span["status"] = {"code": 2, "message": error}
            span["attributes"].append(string("error.type", error))
            span["events"] = [
                {"name": "exception", "attributes": [string("exception.type", error)]}
            ]
        spans.append(span)

    add("1", "", "LangGraph.workflow", 0, 100, {"traceloop.span.kind": "workflow"})
    chain = [("triage", "lookup_customer", "billing"), ("billing", "get_invoice", "refunds"),
             ("refunds", "issue_refund", None)]  # fmt: skip
    for n, (agent, tool, nxt) in enumerate(chain):
        base = 10 + 30 * n
        me = f"{n + 2}0"
        add(me, "1", f"{agent}.agent", base, base + 25,
            {"traceloop.span.kind": "agent", "traceloop.entity.name": agent})  # fmt: skip
        add(f"{n + 2}1", me, f"execute_tool {tool}", base + 2, base + 5,
            {"traceloop.span.kind": "tool", "traceloop.entity.name": tool})  # fmt: skip
        if nxt is None:
            continue
        attrs = {"traceloop.span.kind": "tool", "traceloop.entity.name": f"transfer_to_{nxt}",
                 "traceloop.association.properties.__handoff_destination": nxt}  # fmt: skip
        add(
            f"{n + 2}2",
            me,
            f"execute_tool transfer_to_{nxt}",
            base + 10,
            base + 20,
            attrs,
            "ParentCommand",
        )
        if goto:
            add(f"{n + 2}3", f"{n + 2}2", f"goto {nxt}", base + 12, base + 13,
                {"gen_ai.operation.name": "goto", "langgraph.command.goto_node": nxt})  # fmt: skip
    return [{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}]


def test_a_swarm_handoff_written_as_an_error_with_a_goto_is_a_handoff() -> None:
    for goto in (True, False):
        run = root_of(swarm(goto))
        assert run.ok
        assert agents_of(run) == [
            ("LangGraph.workflow", None, True),
            ("billing", "triage", True),
            ("refunds", "billing", True),
            ("triage", "LangGraph.workflow", True),
        ]
        [triage] = [s for s in run.steps if isinstance(s, AgentStep)]
        [billing] = [s for s in triage.steps if isinstance(s, AgentStep)]
        assert (billing.kind, billing.node) == ("handoff", "transfer_to_billing")
        tools = [s.id for s in triage.steps if isinstance(s, NodeStep) and s.call == "tool"]
        assert tools == ["lookup_customer"]


# -- an app that raised after its agents fails the run ----------------------------


_T0 = 1_796_561_607_000_000_000


def desk_trace(agents: int, last_failed: bool, desk_failed: bool) -> list[dict[str, Any]]:
    """A Langfuse-typed app: a ``desk`` chain span runs one agent after another, each
    handing off to the next with a ``transfer_to_<agent>`` tool; the last may raise, and
    the desk may raise with it."""
    names = [f"agent{n}" for n in range(agents)]
    error = {"code": 2, "message": "card declined"}
    spans: list[dict[str, Any]] = []

    def span(sid: int, parent: int, name: str, kind: str, start: int, bad: bool) -> None:
        spans.append({
            "traceId": "ab" * 16, "spanId": f"{sid:016x}", "parentSpanId": f"{parent:016x}",
            "name": name, "kind": 1, "startTimeUnixNano": str(_T0 + start * 1000),
            "endTimeUnixNano": str(_T0 + start * 1000 + 900),
            "attributes": [string("langfuse.observation.type", kind)],
            "status": error if bad else {},
        })  # fmt: skip

    for n, name in enumerate(names):
        last = n == agents - 1
        span(10 + 2 * n, 1, name, "agent", 10 + 10 * n, last and last_failed)
        if not last:
            span(11 + 2 * n, 10 + 2 * n, f"transfer_to_{names[n + 1]}", "tool", 15 + 10 * n, False)
    span(1, 0, "desk", "chain", 0, desk_failed)
    spans[-1]["parentSpanId"] = ""
    spans[-1]["endTimeUnixNano"] = str(_T0 + (20 + 10 * agents) * 1000)
    scope = {"scope": {"name": "langfuse-sdk"}, "spans": spans}
    return [{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}]


@SETTINGS
@given(agents=st.integers(2, 5), last_failed=st.booleans(), desk_failed=st.booleans())
def test_an_app_that_raised_after_its_last_agent_failed_fails_the_run(
    agents: int, last_failed: bool, desk_failed: bool
) -> None:
    converter = OtlpConverter()
    for doc in desk_trace(agents, last_failed, desk_failed):
        converter.feed(doc)
    events = converter.finish()
    [run] = [r for r in build_forest(events).runs if r.kind == "root"]
    [finding] = classify_events(events).values()
    assert run.agent == "agent0"
    assert [a for a, _, _ in agents_of(run)] == [f"agent{n}" for n in range(agents)]
    raised = last_failed and desk_failed
    assert run.ok is not raised
    if raised:  # failed where the last agent's failure began; the root's own turn ended well
        assert (finding.outcome, finding.origin_agent) == ("failed:child", f"agent{agents - 1}")
        assert run.error is not None and run.error.code == "AGENT_FAILED"
        assert run.error.cause is not None and run.error.cause.message == "card declined"
    else:  # the app caught it (or nothing failed)
        assert finding.outcome == ("degraded" if last_failed else "ok")
