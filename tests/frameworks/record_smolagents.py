"""Record smolagents through openinference-instrumentation-smolagents, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/smolagents/bin/python tests/frameworks/record_smolagents.py``.
Each agent is a ``ToolCallingAgent`` whose model is a ``smolagents.Model``
subclass (the framework's own model interface) playing the turns written
below; every connection is refused.

smolagents has no handoff: an agent delegates to its ``managed_agents``, which
its model calls like tools (by the managed agent's name, with a ``task``) and
which return a report. Agent-as-tool is a ``Tool`` whose ``forward`` runs an
agent. The truth is read from each agent's own memory (``agent.memory.steps``:
the tool calls its model made, and the errors the framework caught).
"""

from __future__ import annotations

import sys
import threading
import warnings
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import (
    Loop,
    Recorder,
    Truth,
    circle_of,
    go_offline,
    in_start_order,
    instrumented_by,
    memory_provider,
    started,
)

go_offline()
warnings.filterwarnings("ignore")

from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402
from smolagents import Model, Tool, ToolCallingAgent  # noqa: E402
from smolagents.memory import ActionStep  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage  # noqa: E402

_ids = count(1)


def call(name: str, **args: Any) -> ChatMessageToolCall:
    function = ChatMessageToolCallFunction(name=name, arguments=args)
    return ChatMessageToolCall(function=function, id=f"call_{next(_ids)}", type="function")


def answer(text: str) -> list[ChatMessageToolCall]:
    """smolagents' ToolCallingAgent ends with its own ``final_answer`` tool."""
    return [call("final_answer", answer=text)]


class ScriptedModel(Model):
    """Answers each request with the next turn: a list of tool calls."""

    def __init__(self, agent: str, turns: list[list[ChatMessageToolCall]]) -> None:
        super().__init__(model_id=f"scripted-{agent}")
        self.agent = agent
        self.turns = list(turns)

    def generate(self, messages: Any, stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:  # fmt: skip
        if getattr(self, "starting", False):
            self.starting = False
            STARTING.release()
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        if isinstance(self.turns[0], str):  # a text: the answer asked for at max_steps
            return ChatMessage(role=MessageRole.ASSISTANT, content=self.turns.pop(0),
                               token_usage=TokenUsage(input_tokens=120, output_tokens=30))  # fmt: skip
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=self.turns.pop(0),
            token_usage=TokenUsage(input_tokens=120, output_tokens=30),
        )


class PlainTool(Tool):
    """A plain tool answering ``answer``; with ``raises`` it raises."""

    inputs = {"query": {"type": "string", "description": "what to look up"}}  # noqa: RUF012 (smolagents reads it from the class)
    output_type = "string"
    skip_forward_signature_validation = True

    def __init__(self, name: str, answer: str, raises: str | None = None) -> None:
        self.name = name
        self.description = f"{name}."
        self.answer = answer
        self.raises = raises
        super().__init__()

    def forward(self, query: str) -> str:
        if self.raises is not None:
            raise RuntimeError(self.raises)
        return self.answer


class AgentTool(Tool):
    """A tool whose body runs an agent and returns its answer (agent-as-tool)."""

    inputs = {"request": {"type": "string", "description": "what to ask"}}  # noqa: RUF012 (smolagents reads it from the class)
    output_type = "string"
    skip_forward_signature_validation = True

    def __init__(self, name: str, agent: ToolCallingAgent) -> None:
        self.name = name
        self.description = f"Ask {agent.name}."
        self.agent = agent
        super().__init__()

    def forward(self, request: str) -> str:
        return str(self.agent.run(request))


STARTING = threading.Lock()  # held from an agent's start until its model's first turn


class Agent(ToolCallingAgent):
    """A ToolCallingAgent that notes when it starts.

    Concurrent managed agents start in any order: the lock, released at the agent's
    first model turn (its span has begun by then), keeps the order noted the order run.
    """

    def run(self, *args: Any, **kwargs: Any) -> Any:
        STARTING.acquire()
        started(self.name)
        self.model.starting = True
        return super().run(*args, **kwargs)


def agent(name: str, turns: list[Any], tools: list[Tool] = (), managed: list[Any] = (),  # type: ignore[assignment]
          max_steps: int = 6) -> Any:  # fmt: skip
    return Agent(
        tools=list(tools),
        model=ScriptedModel(name, turns),
        managed_agents=list(managed) or None,
        name=name,
        description=f"The {name} agent.",
        verbosity_level=LogLevel.OFF,
        max_steps=max_steps,
    )


def calls_of(a: Any) -> list[tuple[str, bool]]:
    """The tool calls an agent's model made, and whether each went well.

    Read from the agent's own memory: a step whose tool raised carries the
    error smolagents caught and gave back to the model.
    """
    found: list[tuple[str, bool]] = []
    for step in a.memory.steps:
        message = getattr(step, "model_output_message", None)
        if isinstance(step, ActionStep) and message is not None and message.tool_calls:
            # final_answer too: smolagents runs it as a tool (a TOOL span of its own).
            found.extend((tc.function.name, step.error is None) for tc in message.tool_calls)
    return found


def truth_of(agents: dict[str, Any], managed: set[str], edges: list[tuple[str, str, str | None]],
             root: str) -> Truth:  # fmt: skip
    """The truth from the agents' memories: each calls its tools; managed agents are not tools."""
    truth = Truth()
    index: dict[str, int] = {}
    callers = {callee: (caller, node) for caller, callee, node in edges}
    for name in in_start_order(list(agents)):
        if name == root:
            index[name] = truth.agent(name)
        else:
            caller, node = callers[name]
            index[name] = truth.agent(name, index[caller], "delegate", node)
        for tool, ok in calls_of(agents[name]):
            if tool not in managed:
                truth.tool(index[name], tool, ok)
    return truth


def handoff_chain(recorder: Recorder) -> None:
    refunds = agent("refunds", [[call("issue_refund", query="INV-7")], answer("Refund R-9 issued.")],
                    [PlainTool("issue_refund", "refund R-9 issued")])  # fmt: skip
    billing = agent(
        "billing",
        [[call("get_invoice", query="C-1")], [call("refunds", task="Refund INV-7.")],
         answer("INV-7 refunded: R-9.")],
        [PlainTool("get_invoice", "INV-7: 40 EUR, paid twice")],
        [refunds],
    )  # fmt: skip
    triage = agent(
        "triage",
        [[call("lookup_customer", query="Ada")], [call("billing", task="C-1 was charged twice.")],
         answer("Your refund R-9 is on its way.")],
        [PlainTool("lookup_customer", "C-1, Ada")],
        [billing],
    )  # fmt: skip
    recorder.start()
    final = triage.run("I was charged twice.")
    assert final == "Your refund R-9 is on its way.", final
    agents = {"triage": triage, "billing": billing, "refunds": refunds}
    truth = truth_of(agents, {"billing", "refunds"},
                     [("triage", "billing", None), ("billing", "refunds", None)], "triage")  # fmt: skip
    recorder.write(
        "handoff_chain",
        note=(
            "A chain of managed agents: triage manages billing, billing manages refunds; each "
            "model calls the managed agent by its name (a 'task' argument). smolagents writes no "
            "tool span for a managed-agent call, so there is no node: the callee's '<name>.run' "
            "AGENT span hangs under the caller's 'Step N' CHAIN span. Each managed agent "
            "returns its report to its manager."
        ),
        result={"final_output": final, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
    )


def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [[call("search_kb", query="router")], answer("Reset it (KB-12).")],
                       [PlainTool("search_kb", "KB-12: reset the router")])  # fmt: skip
    support = agent(
        "support",
        [[call("ask_specialist", request="The router blinks red.")],
         answer("The specialist says: reset the router (KB-12).")],
        [AgentTool("ask_specialist", specialist)],
    )  # fmt: skip
    triage = agent("triage", [[call("support", task="Router blinks red.")], answer("Reset the router.")],
                   managed=[support])  # fmt: skip
    recorder.start()
    final = triage.run("My router blinks red.")
    assert final == "Reset the router.", final
    agents = {"triage": triage, "support": support, "specialist": specialist}
    truth = truth_of(agents, {"support", "ask_specialist"},
                     [("triage", "support", None), ("support", "specialist", "ask_specialist")],
                     "triage")  # fmt: skip
    recorder.write(
        "handoff_then_tool_agent",
        note=(
            "triage manages support (a managed agent, no tool span); support calls specialist "
            "through a Tool (ask_specialist) whose forward() runs the agent."
        ),
        result={"final_output": final, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
    )


def tool_raises(recorder: Recorder) -> None:
    billing = agent(
        "billing",
        [[call("charge_card", query="C-1")], answer("The card was declined.")],
        [PlainTool("charge_card", "", raises="card declined")],
    )
    triage = agent("triage", [[call("billing", task="Charge C-1.")], answer("Your card was declined.")],
                   managed=[billing])  # fmt: skip
    recorder.start()
    final = triage.run("Charge my card.")
    assert final == "Your card was declined.", final
    assert calls_of(billing) == [("charge_card", False), ("final_answer", True)], calls_of(billing)
    agents = {"triage": triage, "billing": billing}
    truth = truth_of(agents, {"billing"}, [("triage", "billing", None)], "triage")
    recorder.write(
        "tool_raises",
        note=(
            "billing's tool raises; smolagents catches it (AgentToolExecutionError in the step's "
            "memory) and gives the error to billing's model, which answers: billing and the run "
            "end well, only the tool failed."
        ),
        result={"final_output": final, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
    )


def parallel_delegates(recorder: Recorder) -> None:
    def delegate(name: str, tool: str, text: str, raises: str | None = None) -> Any:
        return agent(name, [[call(tool, query="Lisbon")], answer(text or "none left")],
                     [PlainTool(tool, text, raises)])  # fmt: skip

    helpers = [
        delegate("flights", "search_flights", "TP-101 at 9:00"),
        delegate("hotels", "search_hotels", "Hotel Tejo"),
        delegate("cars", "rent_car", "", raises="no cars left"),
    ]
    coordinator = agent(
        "coordinator",
        [[call(h.name, task="Lisbon") for h in helpers],
         answer("Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented.")],
        managed=helpers,
    )  # fmt: skip
    recorder.start()
    final = coordinator.run("Plan my Lisbon trip.")
    assert final.startswith("Booked TP-101"), final
    agents = {"coordinator": coordinator, **{h.name: h for h in helpers}}
    truth = truth_of(agents, {h.name for h in helpers},
                     [("coordinator", h.name, None) for h in helpers], "coordinator")  # fmt: skip
    recorder.write(
        "parallel_delegates",
        note=(
            "The coordinator's model calls three managed agents in one message; the "
            "ToolCallingAgent runs them in a thread pool. cars' tool raises, smolagents gives the "
            "error to cars' model, which answers. smolagents' managed agents form a tree, so no "
            "loop of agents can be written."
        ),
        result={"final_output": final, "last_agent": "coordinator", "raised": None},
        run_ok=True,
        truth=truth,
    )


def activations(manager: Any, managed: set[str]) -> list[str]:
    """The agents in the order they held control, from the manager's own memory: each of
    its action steps (its model's turn), then the managed agents that step called."""
    ran: list[str] = []
    for step in manager.memory.steps:
        if isinstance(step, ActionStep):
            ran.append(manager.name)
            message = step.model_output_message
            calls = message.tool_calls if message is not None and message.tool_calls else []
            ran += [tc.function.name for tc in calls if tc.function.name in managed]
    return ran


def asks(*workers: str, steps: int) -> list[Any]:
    """The manager's turns: call each worker in turn, round and round, ``steps`` times."""
    return [[call(workers[n % len(workers)], task="Who handles this?")] for n in range(steps)]


def max_steps_write(recorder: Recorder, scenario: str, workers: list[str], note: str,
                    full: bool) -> None:  # fmt: skip
    """Run until max_steps; ``full`` asks run() for its RunResult (whose state the root
    span's output then shows) rather than the answer alone."""
    helpers = [agent(w, [answer(f"Ask {w} again later.")] * 10) for w in workers]
    manager = agent("triage", [*asks(*workers, steps=4), "I could not find out, sorry."],
                    managed=helpers, max_steps=4)  # fmt: skip
    recorder.start()
    result = manager.run("Who handles my invoice?", return_full_result=full)
    output = result.output if full else result
    assert not full or result.state == "max_steps_error", result.state
    last = manager.memory.steps[-1]
    assert type(last.error).__name__ == "AgentMaxStepsError", last.error
    ran = activations(manager, set(workers))
    agents = {"triage": manager, **{h.name: h for h in helpers}}
    truth = Truth()
    t = truth.agent("triage")
    for name in ran[1:]:
        if name != "triage":
            i = truth.agent(name, t, "delegate", None)
            for tool, ok in calls_of(agents[name]):
                truth.tool(i, tool, ok)
    for tool, ok in calls_of(manager):
        if tool not in workers:
            truth.tool(t, tool, ok)
    circle, closures = circle_of(ran)
    recorder.write(
        scenario,
        note=f"{note} The sequence is the manager's memory: its action steps, each followed by "
        "the managed agent it called.",
        result={"final_output": output, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
        loop=Loop("degraded", circle, "AgentMaxStepsError", closures),
    )


def pingpong_silent(recorder: Recorder) -> None:
    max_steps_write(recorder, "pingpong_silent", ["billing"],
                         "triage (max_steps=4) hands the task to its managed agent billing at "
                         "every step; billing answers and control comes back, until max_steps: "
                         "smolagents asks triage's model for a final answer without tools and "
                         "returns it, recording AgentMaxStepsError in the last memory step "
                         "(run(return_full_result=True) gives RunResult.state "
                         "'max_steps_error'); nothing is raised.", full=True)  # fmt: skip


def ring_silent(recorder: Recorder) -> None:
    max_steps_write(recorder, "ring_silent", ["billing", "refunds"],
                         "triage (max_steps=4) hands the task to billing, then refunds, then "
                         "billing, then refunds (its managed agents), until max_steps: the "
                         "answer is asked for without tools and run() returns it; "
                         "AgentMaxStepsError is only in the last memory step; nothing is "
                         "raised.", full=False)  # fmt: skip


def loop_ok(recorder: Recorder) -> None:
    billing = agent("billing", [answer("INV-7: 40 EUR.")] * 3)
    manager = agent("triage", [*asks("billing", steps=3), answer("Your invoice is 40 EUR.")],
                    managed=[billing])  # fmt: skip
    recorder.start()
    result = manager.run("How much is my invoice?", return_full_result=True)
    assert result.state == "success" and result.output == "Your invoice is 40 EUR.", result
    ran = activations(manager, {"billing"})
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    truth = Truth()
    t = truth.agent("triage")
    for _ in range(3):
        i = truth.agent("billing", t, "delegate", None)
        truth.tool(i, "final_answer")
    truth.tool(t, "final_answer")
    circle, closures = circle_of(ran)
    recorder.write(
        "loop_ok",
        note="triage hands the task to its managed agent billing three times (one step each), "
        "then answers (max_steps 6). The sequence is triage's memory: its action steps, each "
        "followed by the managed agent it called.",
        result={"final_output": result.output, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
        loop=Loop("ok", circle, None, closures),
    )


class Unavailable(ScriptedModel):
    """A model that raises, as a model whose service is down does."""

    def generate(self, *args: Any, **kwargs: Any) -> ChatMessage:
        if getattr(self, "starting", False):
            self.starting = False
            STARTING.release()
        raise RuntimeError("model service unavailable")


def managed_model_raises(recorder: Recorder) -> None:
    billing = Agent(tools=[], model=Unavailable("billing", []), name="billing",
                    description="The billing agent.", verbosity_level=LogLevel.OFF)  # fmt: skip
    manager = agent("triage", [[call("billing", task="How much is INV-7?")],
                               answer("Billing is unavailable; try again later.")],
                    managed=[billing])  # fmt: skip
    recorder.start()
    final = manager.run("How much is my invoice?")
    assert final == "Billing is unavailable; try again later.", final
    first = manager.memory.steps[1]
    assert isinstance(first, ActionStep) and "model service unavailable" in str(first.error)
    truth = Truth()
    t = truth.agent("triage")
    b = truth.agent("billing", t, "delegate", None)
    truth.failed(b)
    truth.tool(t, "final_answer")
    recorder.write(
        "managed_model_raises",
        note="triage hands the task to its managed agent billing, whose model raises "
        "(RuntimeError: model service unavailable): billing's run raises AgentGenerationError, "
        "triage's step records it as its error (AgentToolExecutionError) and triage's model "
        "carries on and answers. The run returns normally.",
        result={"final_output": final, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
        loop=Loop("degraded", None, None, 0),
    )


def main() -> None:
    provider, exporter = memory_provider("smolagents-recording")
    SmolagentsInstrumentor().instrument(tracer_provider=provider)
    recorder = Recorder(
        "smolagents", "smolagents", instrumented_by("openinference-instrumentation-smolagents"),
        exporter,
    )  # fmt: skip
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, parallel_delegates, pingpong_silent,
         ring_silent, loop_ok, managed_model_raises]
    ):  # fmt: skip
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
