"""Record CrewAI through openinference-instrumentation-crewai, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/crewai/bin/python tests/frameworks/record_crewai.py``.
Each agent's LLM is a ``crewai.llms.base_llm.BaseLLM`` subclass (the
framework's own model interface) answering in CrewAI's ReAct text format with
the turns written below; every connection is refused, CrewAI's own telemetry
is off. The instrumentor runs with its event listener (``use_event_listener``):
without it, it writes no tool span at all.

The crew is hierarchical: the manager agent delegates with CrewAI's own
coworker tools (``Delegate work to coworker``, ``Ask question to coworker``,
the coworker named in the ``coworker`` argument), and a coworker with
``allow_delegation`` delegates in turn. Agent-as-tool is a tool whose body runs
``Agent.kickoff``. The truth is read from CrewAI's event bus (the framework's
callbacks): agent executions, and tool usages with the agent that used them,
finished or failed (a failed tool is given back to the model as an observation).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import (
    Loop,
    Recorder,
    Truth,
    circle_of,
    go_offline,
    instrumented_by,
    memory_provider,
)

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
go_offline()
warnings.filterwarnings("ignore")

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.events import crewai_event_bus  # noqa: E402
from crewai.events.types.agent_events import (  # noqa: E402
    AgentExecutionStartedEvent,
    LiteAgentExecutionStartedEvent,
)
from crewai.events.types.tool_usage_events import (  # noqa: E402
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
)
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402

DELEGATE = "Delegate work to coworker"
FORCED: list[str] = []  # the models asked for a forced final answer (max_iter reached)
ASK = "Ask question to coworker"
SEEN: list[tuple[Any, str, Any]] = []  # (when, kind, what) from the event bus
_lock = threading.Lock()


@crewai_event_bus.on(AgentExecutionStartedEvent)
def _agent(source: Any, event: Any) -> None:
    with _lock:
        SEEN.append((event.timestamp, "agent", event.agent.role))


@crewai_event_bus.on(LiteAgentExecutionStartedEvent)
def _kickoff(source: Any, event: Any) -> None:  # an agent run on its own (Agent.kickoff)
    with _lock:
        SEEN.append((event.timestamp, "agent", event.agent_info.get("role")))


@crewai_event_bus.on(ToolUsageStartedEvent)
def _tool_started(source: Any, event: Any) -> None:
    with _lock:
        SEEN.append((event.timestamp, "call", (event.agent_role, event.tool_name, event.tool_args)))


@crewai_event_bus.on(ToolUsageFinishedEvent)
def _tool_done(source: Any, event: Any) -> None:
    with _lock:
        SEEN.append((event.timestamp, "tool", (event.agent_role, event.tool_name, True)))


@crewai_event_bus.on(ToolUsageErrorEvent)
def _tool_failed(source: Any, event: Any) -> None:
    with _lock:
        SEEN.append((event.timestamp, "tool", (event.agent_role, event.tool_name, False)))


class ScriptedLLM(BaseLLM):
    """Answers each call with the next turn (CrewAI's ReAct text)."""

    turns: list[str] = []  # noqa: RUF012 (a pydantic field: copied per instance)

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> str:  # fmt: skip
        last = messages[-1] if isinstance(messages, list) and messages else {}
        if "MUST give your absolute best final answer" in str(last.get("content", "")):
            FORCED.append(self.model)  # the executor's forced answer at max_iter
            return final("Sorry, we could not find out; an agent will call you back.")
        if not self.turns:
            raise AssertionError(f"{self.model}'s scripted model ran out of turns")
        return self.turns.pop(0)


def act(tool_name: str, **args: Any) -> str:
    return f"Thought: I use {tool_name}.\nAction: {tool_name}\nAction Input: {json.dumps(args)}"


def final(text: str) -> str:
    return f"Thought: I now know the final answer\nFinal Answer: {text}"


def delegate(coworker: str, task: str) -> str:
    return act(DELEGATE, task=task, context="A customer asked.", coworker=coworker)


def plain_tool(name: str, answer: str, raises: str | None = None) -> Any:
    def run(query: str) -> str:
        """Look it up."""
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    run.__name__ = name
    return tool(name)(run)


def agent(role: str, turns: list[str], tools: list[Any] = (), delegates: bool = False) -> Agent:  # type: ignore[assignment]
    return Agent(role=role, goal=f"Do {role}'s part.", backstory=f"The {role} agent.",
                 llm=ScriptedLLM(model=f"scripted-{role}", turns=list(turns)), tools=list(tools),
                 allow_delegation=delegates, verbose=False)  # fmt: skip


def crew(manager: Agent, agents: list[Agent], ask: str) -> Any:
    task = Task(description=ask, expected_output="An answer for the customer.")
    SEEN.clear()
    out = Crew(agents=agents, tasks=[task], process=Process.hierarchical, manager_agent=manager,
               verbose=False).kickoff()  # fmt: skip
    crewai_event_bus.flush() if hasattr(crewai_event_bus, "flush") else None
    return out


def truth_of(nested: dict[str, str] | None = None) -> Truth:
    """The invocations from the event bus, in time order: each agent execution, called by
    the agent whose coworker tool (or agent tool, ``nested``: tool -> agent) started last
    naming it; the other tools' outcomes by the agent that used them."""
    nested = nested or {}
    truth = Truth()
    index: dict[str, int] = {}
    pending: dict[str, tuple[int, str]] = {}  # agent -> (caller's invocation, tool)
    outcomes: list[tuple[str, str, bool]] = []
    for _, kind, value in sorted(SEEN, key=lambda seen: seen[0]):
        if kind == "agent":
            caller = pending.pop(value, None)
            if caller is None and not truth.invocations:
                index[value] = truth.agent(value)
            elif caller is not None:
                index[value] = truth.agent(value, caller[0], "delegate", caller[1])
        elif kind == "call":
            role, name, args = value
            args = json.loads(args) if isinstance(args, str) else args
            if name in (DELEGATE, ASK):
                pending[args["coworker"]] = (index[role], name)
            elif name in nested:
                pending[nested[name]] = (index[role], name)
        elif _key(value[1]) not in {_key(n) for n in (DELEGATE, ASK, *nested)}:
            outcomes.append(value)
    for role, name, ok in outcomes:
        truth.tool(index[role], name, ok)
    return truth


def _key(name: str) -> str:
    """CrewAI's finished-tool events name a tool as a function (``delegate_work_to_coworker``)."""
    return name.lower().replace(" ", "_")


def write(recorder: Recorder, scenario: str, note: str, out: Any, truth: Truth,
          loop: Loop | None = None) -> None:  # fmt: skip
    recorder.write(scenario, note=note,
                   result={"final_output": out.raw, "last_agent": truth.invocations[0]["agent"], "raised": None},
                   run_ok=True, truth=truth, loop=loop)  # fmt: skip


def handoff_chain(recorder: Recorder) -> None:
    billing = agent("billing", [act("get_invoice", query="C-1"), final("INV-7 was paid twice.")],
                    [plain_tool("get_invoice", "INV-7: 40 EUR, paid twice")])  # fmt: skip
    refunds = agent("refunds", [act("issue_refund", query="INV-7"), final("Refund R-9 issued.")],
                    [plain_tool("issue_refund", "refund R-9 issued")])  # fmt: skip
    triage = agent("triage", [delegate("billing", "Check C-1's invoices."),
                              delegate("refunds", "Refund INV-7."), final("Refund R-9 is on its way.")])  # fmt: skip
    recorder.start()
    out = crew(triage, [billing, refunds], "I was charged twice.")
    truth = truth_of()
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "refunds"], truth
    write(recorder, "handoff_chain",
          "A hierarchical crew: the manager (triage) delegates to billing, then to refunds, "
          "with 'Delegate work to coworker' (the coworker in its 'coworker' argument); each "
          "coworker's answer is the tool's result. A coworker running a delegated task is "
          "given no coworker tools of its own, so CrewAI has no deeper chain.", out, truth)  # fmt: skip


def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [act("search_kb", query="router"), final("Reset the router (KB-12).")],
                       [plain_tool("search_kb", "KB-12: reset the router")])  # fmt: skip

    @tool("ask_specialist")
    def ask_specialist(request: str) -> str:
        """Ask the specialist."""
        return str(specialist.kickoff(request).raw)

    support = agent("support", [act("ask_specialist", request="The router blinks red."),
                                final("The specialist says: reset the router (KB-12).")],
                    [ask_specialist])  # fmt: skip
    triage = agent(
        "triage", [delegate("support", "Router blinks red."), final("Reset the router (KB-12).")]
    )
    recorder.start()
    out = crew(triage, [support], "My router blinks red.")
    truth = truth_of({"ask_specialist": "specialist"})
    assert [i["agent"] for i in truth.invocations] == ["triage", "support", "specialist"], truth
    write(recorder, "handoff_then_tool_agent",
          "The manager (triage) delegates to support; support calls specialist through a tool "
          "(ask_specialist) whose body runs Agent.kickoff.", out, truth)  # fmt: skip


def tool_raises(recorder: Recorder) -> None:
    billing = agent("billing", [act("charge_card", query="C-1"), final("The card was declined.")],
                    [plain_tool("charge_card", "", raises="card declined")])  # fmt: skip
    triage = agent("triage", [delegate("billing", "Charge C-1."), final("Your card was declined.")])
    recorder.start()
    out = crew(triage, [billing], "Charge my card.")
    truth = truth_of()
    tools = truth.invocations[1]["tools"]
    assert tools and all(t == {"name": "charge_card", "ok": False} for t in tools), (
        truth.invocations
    )
    write(recorder, "tool_raises",
          "billing's tool raises; CrewAI catches it, tries the tool again (its tool usage "
          "retries), then gives the error to billing's model as the observation, and billing "
          "answers: billing and the run end well, only the tool's calls failed.", out, truth)  # fmt: skip


def ask_then_delegate(recorder: Recorder) -> None:
    billing = agent("billing", [final("Invoices are in EUR."), act("get_invoice", query="C-1"),
                                final("INV-7: 40 EUR.")],
                    [plain_tool("get_invoice", "INV-7: 40 EUR")])  # fmt: skip
    triage = agent("triage", [act(ASK, question="Which currency?", context="C-1", coworker="billing"),
                              delegate("billing", "Find C-1's invoice."), final("40 EUR.")])  # fmt: skip
    recorder.start()
    out = crew(triage, [billing], "How much is my invoice?")
    truth = truth_of()
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "billing"], truth
    write(recorder, "ask_then_delegate",
          "The manager asks billing a question ('Ask question to coworker'), then delegates to "
          "billing ('Delegate work to coworker'): two invocations of billing. A coworker cannot "
          "call the manager back, so CrewAI allows no loop of agents.", out, truth)  # fmt: skip


def activations(truth: Truth) -> list[str]:
    """The agents in the order they held control: the manager, and after each coworker it
    delegated to, the manager again."""
    manager = truth.invocations[0]["agent"]
    return [manager, *(a for i in truth.invocations[1:] for a in (i["agent"], manager))]


def manager_loop(recorder: Recorder, delegations: int, then: str | None, max_iter: int) -> Any:
    billing = agent("billing", [final("INV-7: 40 EUR.")] * 10)
    # A new task each time: CrewAI answers a tool call it has seen from its cache.
    turns = [delegate("billing", f"Who handles this? (try {n + 1})") for n in range(delegations)]
    triage = agent("triage", [*turns, *([final(then)] if then else [])])
    triage.max_iter = max_iter
    recorder.start()
    FORCED.clear()
    out = crew(triage, [billing], "Who handles my invoice?")
    return out, truth_of()


# A manager stopped at max_iter (CrewAI asks its model for a final answer without tools,
# 'Now it's time you MUST give your absolute best final answer...') leaves the same spans
# as one that answered on its own (no LLM spans: create_llm_spans=False): nothing tracekit
# could tell it by, so it is not recorded.


def loop_ok(recorder: Recorder) -> None:
    out, truth = manager_loop(recorder, 3, "Your invoice is 40 EUR.", 25)
    assert not FORCED and out.raw == "Your invoice is 40 EUR.", (FORCED, out.raw)
    ran = activations(truth)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    write(recorder, "loop_ok",
          "A hierarchical crew whose manager (triage) delegates to billing three times, then "
          "answers (max_iter 25).", out, truth, Loop("ok", circle, None, closures))  # fmt: skip


def main() -> None:
    provider, exporter = memory_provider("crewai-recording")
    CrewAIInstrumentor().instrument(
        tracer_provider=provider, use_event_listener=True, create_llm_spans=False
    )
    recorder = Recorder(
        "crewai", "crewai", instrumented_by("openinference-instrumentation-crewai"), exporter
    )
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, ask_then_delegate, loop_ok]
    ):  # fmt: skip
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
