"""The committed recordings of real framework runs read cleanly and carry a sound ground truth.

The recordings are made by ``tests/frameworks/record_<framework>.py`` in each
framework's own venv (``make record-frameworks``); this test needs none of the
frameworks, only the files. Golden trees of tracekit's output are elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _recording import SHARED_SCENARIOS
from known_gaps import READS, marked

from tracekit.events import RunStart
from tracekit.intake import read_trace

HERE = Path(__file__).parent
RECORDINGS = HERE / "recordings"
TRACEKIT = str(Path(sys.executable).parent / "tracekit")
# The frameworks recorded so far (each has its record_<framework>.py script).
FRAMEWORKS = sorted(p.name for p in RECORDINGS.iterdir() if p.is_dir())
FILES = sorted(RECORDINGS.glob("*/*.otlp.json"))
KEYS = {
    "framework",
    "version",
    "instrumentation",
    "scenario",
    "note",
    "result",
    "run_ok",
    "invocations",
}
# A scenario whose agents went round adds the class it must get and its circle (all four).
LOOP_KEYS = {"outcome", "circle", "limit", "loop_revisits"}
OUTCOMES = {"ok", "degraded", "failed:child", "failed:recursion"}
INVOCATION_KEYS = {"agent", "parent", "kind", "node", "ok", "tools"}


def scenarios_of(framework: str) -> set[str]:
    """The scenarios the framework's script writes (its ``recorder.write("<scenario>"`` calls,
    or ``write(recorder, "<scenario>"`` through a helper of the script's), and those it runs
    from another module (another script's scenarios under another instrumentation), named
    in its ``recorder.chosen([...])`` list or through ``shared_scenarios``."""
    source = (HERE / f"record_{framework}.py").read_text()
    written = set(re.findall(r'(?:recorder\.write\(|write\(recorder,)\s*"(\w+)"', source))
    chosen = re.search(r"recorder\.chosen\(\s*\[([^\]]*)\]", source)
    if chosen is not None:
        written |= {name.split(".")[-1] for name in re.findall(r"[\w.]+", chosen.group(1))}
    shared = re.search(r"shared_scenarios\(\s*recorder,\s*\w+,?([^)]*)\)", source)
    if shared is not None:
        more = {name.split(".")[-1] for name in re.findall(r"[\w.]+", shared.group(1))}
        written |= set(SHARED_SCENARIOS) | more
    return written


def span_strings(path: Path) -> tuple[set[str], set[str]]:
    """Every span name, and every string attribute value, of a recording."""
    names: set[str] = set()
    values: set[str] = set()
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    names.add(span["name"])
                    for attribute in span.get("attributes", []):
                        if "stringValue" in attribute["value"]:
                            values.add(attribute["value"]["stringValue"])
    return names, values


def spans_of(path: Path) -> list[dict[str, Any]]:
    return [
        span
        for line in path.read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]


def first_start(agent: str, spans: list[dict[str, Any]]) -> int:
    """When the first span of ``agent`` began: named after it, or with it as its agent name."""
    starts = [int(span["startTimeUnixNano"]) for span in spans if names_agent(span, agent)]
    assert starts, f"no span of {agent}"
    return min(starts)


def names_agent(span: dict[str, Any], agent: str) -> bool:
    """The span is the agent's: named after it (``invoke_agent x``, ``x``, smolagents' ``x.run``,
    Agent Framework's ``executor.process x``), with it as its agent name, or (CrewAI, LlamaIndex)
    a span whose input or output names it (``coworker``, ``current_agent_name``)."""
    name = span["name"]
    if name in agent_span_names(agent) or name.endswith(f" {agent}"):
        return True
    for a in span.get("attributes", []):
        value = a["value"].get("stringValue")
        if a["key"] in AGENT_KEYS and value == agent:
            return True
        if a["key"] in CONTENT_KEYS and value and input_names(value, agent):
            return True
    return False


#: The attributes that name a span's agent (OpenLLMetry's Agno: a team's span by its team name).
AGENT_KEYS = ("agent.name", "gen_ai.agent.name", "graph.node.id", "agno.team.name")


def agent_span_names(agent: str) -> tuple[str, ...]:
    """The span names of an agent's own span: OpenInference's, GenAI's, smolagents' ``x.run``,
    OpenLLMetry's ``x.agent`` and ``x.team``."""
    return (agent, f"invoke_agent {agent}", f"{agent}.run", f"{agent}.agent", f"{agent}.team")


#: The attributes that carry a span's input or output as JSON (OpenInference, OpenLLMetry):
#: the only place some instrumentations name an agent (OpenLLMetry's LlamaIndex spans are
#: all ``AgentWorkflow.task``, the agent in ``current_agent_name``).
CONTENT_KEYS = ("input.value", "traceloop.entity.input", "traceloop.entity.output")


def input_names(value: str, agent: str) -> bool:
    """A span's input names the agent: ``"coworker": "x"`` (JSON) or ``current_agent_name='x'``."""
    keys = ("coworker", "current_agent_name", "member_id", "agent_name")
    return any(f'"{key}": "{agent}"' in value or f"{key}='{agent}'" in value for key in keys)


def tool_spans(spans: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    """The spans of a tool: named after it, or with it as their tool name (smolagents'
    tool spans are named after the tool's class)."""
    return [
        s
        for s in spans
        if s["name"] == tool
        or s["name"].endswith(f" {tool}")
        or any(
            a["key"] in ("tool.name", "gen_ai.tool.name") and a["value"].get("stringValue") == tool
            for a in s.get("attributes", [])
        )
    ]


#: A tool error written only in the span's output, with an OK status (OpenLLMetry's LlamaIndex:
#: ``ToolOutput.is_error``; its Agno: the ``ToolExecutionResult`` with ``status='failure'``).
ERROR_OUTPUTS = ('"is_error": true', "status='failure'")

#: The exceptions LangGraph raises to move control (a ``Command`` to the parent graph is
#: a ``ParentCommand``, one of the ``GraphBubbleUp`` family): a handoff, not a failure.
CONTROL_FLOW = ("ParentCommand", "GraphBubbleUp")


def failed(span: dict[str, Any]) -> bool:
    """An exception event, ``error.type``, ERROR status or error output that is not LangGraph's
    control flow.

    Some instrumentations (OpenLLMetry, MLflow) mark a span that handed off with an
    ERROR status and a ``ParentCommand`` exception: that span did not fail.
    """
    kinds = [
        a["value"].get("stringValue", "")
        for event in span.get("events", [])
        if event["name"] == "exception"
        for a in event.get("attributes", [])
        if a["key"] == "exception.type"
    ] + [
        a["value"].get("stringValue", "")
        for a in span.get("attributes", [])
        if a["key"] == "error.type"
    ]
    if any(not kind.endswith(CONTROL_FLOW) for kind in kinds):
        return True
    if any(
        a["key"] in CONTENT_KEYS
        and any(m in a["value"].get("stringValue", "") for m in ERROR_OUTPUTS)
        for a in span.get("attributes", [])
    ):
        return True
    return span.get("status", {}).get("code") == 2 and not kinds


def named_in(name: str, names: set[str], values: set[str]) -> bool:
    """A span is named after it (``invoke_agent triage``, ``triage``, ``triage.run``), an
    attribute is it, or an input names it as an agent (``"coworker": "triage"``)."""
    return (
        name in values
        or any(n in (name, f"{name}.run") or n.endswith(f" {name}") for n in names)
        or any(input_names(v, name) for v in values)
    )


def test_every_framework_has_its_scripts_scenarios() -> None:
    assert FRAMEWORKS, "no recording"
    for framework in FRAMEWORKS:
        assert (HERE / f"record_{framework}.py").is_file(), framework
        made = scenarios_of(framework)
        assert len(made) >= 4, (framework, made)
        folder = RECORDINGS / framework
        recorded = {p.name.removesuffix(".otlp.json") for p in folder.glob("*.otlp.json")}
        expected = {p.name.removesuffix(".expected.json") for p in folder.glob("*.expected.json")}
        assert recorded == made == expected, (framework, recorded, expected)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recording_reads_with_no_rejected_line(path: Path) -> None:
    result = read_trace(path)
    assert result.format == "otlp"
    assert result.bad_lines == []
    assert result.lines_read == len(path.read_text().splitlines()) >= 1
    assert any(isinstance(event, RunStart) for event in result.events)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_expected_file_is_a_sound_ground_truth(path: Path) -> None:
    scenario = path.name.removesuffix(".otlp.json")
    truth = json.loads(path.with_name(f"{scenario}.expected.json").read_text())
    assert set(truth) in (KEYS, KEYS | LOOP_KEYS)
    assert truth["scenario"] == scenario
    assert truth.get("outcome", "ok") in OUTCOMES
    assert (truth.get("outcome") == "failed:recursion") <= (not truth["run_ok"])
    assert truth["version"] and truth["instrumentation"] and truth["note"]
    assert set(truth["result"]) == {"final_output", "last_agent", "raised"}
    assert truth["run_ok"] is (truth["result"]["raised"] is None)
    names, values = span_strings(path)
    invocations: list[dict[str, Any]] = truth["invocations"]
    assert invocations and invocations[0]["parent"] is None
    calls = records_calls(invocations, names, values)
    for index, invocation in enumerate(invocations):
        check_invocation(index, invocation, names, values, calls)
    assert truth["result"]["last_agent"] in {i["agent"] for i in invocations}
    spans = spans_of(path)
    # An agent invoked again (a loop, a supervisor) is checked at its first invocation.
    agents = list(dict.fromkeys(i["agent"] for i in invocations))
    if not calls:
        agents = [a for a in agents if any(names_agent(span, a) for span in spans)]
    else:
        agents = [a for a in agents if not dropped(a, spans)]
    starts = [first_start(agent, spans) for agent in agents]
    assert starts == sorted(starts), "the invocations are not in order of start"
    check_failures_are_in_the_spans(invocations, spans, calls)
    if "outcome" in truth:
        check_loop(truth)


def check_loop(truth: dict[str, Any]) -> None:
    """The loop fields agree with the run: a limit raised only by a run that raised it,
    a limit named for a loop cut off or handled, and a circle of agents that ran in that
    order, closing as often as said."""
    outcome, circle, limit = truth["outcome"], truth["circle"], truth["limit"]
    revisits = truth["loop_revisits"]
    assert outcome in OUTCOMES
    assert isinstance(revisits, int) and revisits >= 0
    if outcome == "failed:recursion":
        assert not truth["run_ok"] and limit and circle
        assert truth["result"]["raised"].startswith(f"{limit}:"), (limit, truth["result"])
    if outcome == "ok":
        assert truth["run_ok"] and limit is None
    if outcome == "degraded" and circle is not None:
        assert limit, "a loop cut off silently, or a limit handled, names its limit"
    if circle is None:
        assert revisits == 0
        return
    cycle = circle.split(" -> ")
    assert len(cycle) >= 3 and cycle[0] == cycle[-1] and cycle[:-1] == min(rotations(cycle[:-1]))
    assert revisits >= 1
    # The agents in start order, or with a delegate's caller taking control back in
    # between (a manager between its managed agents; not a LoopAgent, which writes nothing).
    sequences = [[i["agent"] for i in truth["invocations"]], activations(truth["invocations"])]
    assert any(closes(ran, cycle[:-1], revisits) for ran in sequences), (circle, sequences)


def closes(ran: list[str], cycle: list[str], times: int) -> bool:
    """The sequence goes round the cycle exactly ``times`` times at most, and once that often."""
    closed = [[*r * times, r[0]] for r in rotations(cycle)]
    more = [[*r * (times + 1), r[0]] for r in rotations(cycle)]
    return any(contains(ran, c) for c in closed) and not any(contains(ran, m) for m in more)


def activations(invocations: list[dict[str, Any]]) -> list[str]:
    """The agents in the order they held control: each invocation as it starts, and the
    caller again after a delegate that returned (a handoff's caller does not come back)."""
    ran: list[str] = []
    for invocation in invocations:
        ran.append(invocation["agent"])
        if invocation["kind"] == "delegate" and invocation["ok"]:
            ran.append(invocations[invocation["parent"]]["agent"])
    return ran


def rotations(cycle: list[str]) -> list[list[str]]:
    return [cycle[n:] + cycle[:n] for n in range(len(cycle))]


def contains(sequence: list[str], part: list[str]) -> bool:
    return any(sequence[n : n + len(part)] == part for n in range(len(sequence) - len(part) + 1))


def dropped(agent: str, spans: list[dict[str, Any]]) -> bool:
    """The agent's own span never arrived (smolagents drops a managed agent's span when its
    run raises): no span names it, but a failed span's error names it (``'billing'``)."""
    if any(names_agent(span, agent) for span in spans):
        return False
    messages = [s.get("status", {}).get("message", "") for s in spans if failed(s)]
    assert any(f"'{agent}'" in m for m in messages), f"no span of {agent}"
    return True


def records_calls(invocations: list[dict[str, Any]], names: set[str], values: set[str]) -> bool:
    """Whether the instrumentation spans tool calls: some tool or node of the truth is named
    in the spans (OpenLLMetry's CrewAI instrumentation spans agents and tasks, no tool)."""
    called = [t["name"] for i in invocations for t in i["tools"]]
    called += [i["node"] for i in invocations if i["node"]]
    return not called or any(named_in(name, names, values) for name in called)


def check_failures_are_in_the_spans(
    invocations: list[dict[str, Any]], spans: list[dict[str, Any]], calls: bool = True
) -> None:
    """A tool or agent the truth says raised has a failed span of that name; one that did not, none."""
    for invocation in invocations if calls else []:
        for tool in invocation["tools"]:
            mine = tool_spans(spans, tool["name"])
            assert mine and any(map(failed, mine)) is not tool["ok"], tool
    failed_agents = {i["agent"] for i in invocations if not i["ok"]}
    for invocation in invocations:
        agent = invocation["agent"]
        if calls and dropped(agent, spans):
            assert agent in failed_agents, f"{agent} has no span, yet did not fail"
            continue
        mine = [s for s in spans if s["name"] in agent_span_names(agent)]
        assert any(map(failed, mine)) is (agent in failed_agents), agent


def check_invocation(
    index: int, invocation: dict[str, Any], names: set[str], values: set[str], calls: bool = True
) -> None:
    assert set(invocation) == INVOCATION_KEYS
    # An agent run inside a tool the instrumentation does not span (CrewAI's Agent.kickoff
    # in a tool, through OpenLLMetry) may leave no span at all.
    hidden = not calls and invocation["kind"] == "delegate"
    assert hidden or named_in(invocation["agent"], names, values), invocation["agent"]
    if index == 0:
        assert invocation["kind"] is invocation["node"] is None
    else:
        assert 0 <= invocation["parent"] < index
        assert invocation["kind"] in ("handoff", "delegate")
        # No node: the framework ran no tool for the call (a managed agent in smolagents,
        # a handoff short-circuited by Agent Framework or written as messages only).
        assert (
            invocation["node"] is None or not calls or named_in(invocation["node"], names, values)
        )
    assert isinstance(invocation["ok"], bool)
    for tool in invocation["tools"]:
        assert set(tool) == {"name", "ok"} and isinstance(tool["ok"], bool)
        assert not calls or named_in(tool["name"], names, values), tool["name"]


@pytest.mark.parametrize(
    "framework", marked(READS, [pytest.param(f, id=f) for f in FRAMEWORKS], "handoff_chain")
)
def test_tracekit_tree_reads_the_handoff_chain(framework: str) -> None:
    path = RECORDINGS / framework / "handoff_chain.otlp.json"
    done = subprocess.run(
        [TRACEKIT, "tree", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and "Error" not in done.stderr
