"""Record Agno teams through openinference-instrumentation-agno, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/agno/bin/python tests/frameworks/record_agno.py``.
Each agent and each team leader has a ``agno.models.base.Model`` subclass (the
framework's own model interface) playing the turns written below; every
connection is refused.

A team's leader delegates with Agno's own ``delegate_task_to_member`` tool
(``member_id``, ``task``); a team can be a member of another team (nested
teams). Agent-as-tool is a plain tool whose body runs an agent. The truth is
read from the run's own output: ``TeamRunOutput.tools`` (the leader's calls,
``tool_call_error`` when one raised, which Agno catches and gives back to the
model) and ``member_responses`` (each member's own run output, recursively).
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import dataclass, field
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
    instrumented_by,
    memory_provider,
    started,
)

go_offline()
warnings.filterwarnings("ignore")

from agno.agent import Agent  # noqa: E402
from agno.models.base import Model  # noqa: E402
from agno.models.response import ModelResponse  # noqa: E402
from agno.team import Team  # noqa: E402
from agno.tools import tool  # noqa: E402
from openinference.instrumentation.agno import AgnoInstrumentor  # noqa: E402

_ids = count(1)
DELEGATE = "delegate_task_to_member"


@dataclass
class ScriptedModel(Model):
    """Answers each request with the next turn: a text, or a list of (tool, arguments)."""

    agent: str = ""
    turns: list[Any] = field(default_factory=list)

    def _next(self) -> ModelResponse:
        started(self.agent)
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        turn = self.turns.pop(0)
        if isinstance(turn, str):
            return ModelResponse(role="assistant", content=turn)
        calls = [{"id": f"call_{next(_ids)}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}} for name, args in turn]  # fmt: skip
        return ModelResponse(role="assistant", content="", tool_calls=calls)

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next()

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next()

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self._next()

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self._next()

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response


def model(agent: str, *turns: Any) -> ScriptedModel:
    return ScriptedModel(id=f"scripted-{agent}", name="scripted", provider="scripted", agent=agent,
                         turns=list(turns))  # fmt: skip


def plain_tool(name: str, answer: str, raises: str | None = None) -> Any:
    def run(query: str) -> str:
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    return tool(name=name, description=f"{name}.")(run)


def delegate(member: str, task: str) -> tuple[str, dict[str, str]]:
    return (DELEGATE, {"member_id": member, "task": task})


def agent(name: str, turns: list[Any], tools: list[Any] = ()) -> Agent:  # type: ignore[assignment]
    return Agent(name=name, id=name, model=model(name, *turns), tools=list(tools))


def team(name: str, turns: list[Any], members: list[Any], tools: list[Any] = (),  # type: ignore[assignment]
         **options: Any) -> Team:  # fmt: skip
    return Team(name=name, id=name, model=model(name, *turns), members=members, tools=list(tools),
                **options)  # fmt: skip


def add(truth: Truth, output: Any, parent: int | None, nested: dict[str, str]) -> None:
    """One run output (an agent's or a team leader's) and, recursively, its members'."""
    name = getattr(output, "team_id", None) or output.agent_id
    kind, node = (None, None) if parent is None else ("delegate", DELEGATE)
    index = truth.agent(name, parent, kind, node)
    members = list(getattr(output, "member_responses", None) or [])
    for execution in output.tools or []:
        if execution.tool_name == DELEGATE:
            add(truth, members.pop(0), index, nested)
        elif execution.tool_name in nested:
            inner = truth.agent(nested[execution.tool_name], index, "delegate", execution.tool_name)
            for sub in INNER.pop(nested[execution.tool_name]).tools or []:
                truth.tool(inner, sub.tool_name, not sub.tool_call_error)
        else:
            truth.tool(index, execution.tool_name, not execution.tool_call_error)


INNER: dict[str, Any] = {}  # an agent run inside a tool -> its run output


def truth_of(output: Any, nested: dict[str, str] | None = None) -> Truth:
    truth = Truth()
    add(truth, output, None, nested or {})
    return truth


def write(recorder: Recorder, scenario: str, note: str, output: Any, truth: Truth) -> None:
    recorder.write(scenario, note=note,
                   result={"final_output": str(output.content), "last_agent": truth.invocations[0]["agent"],
                           "raised": None},
                   run_ok=True, truth=truth)  # fmt: skip


def handoff_chain(recorder: Recorder) -> None:
    refunds = agent("refunds", [[("issue_refund", {"query": "INV-7"})], "Refund R-9 issued."],
                    [plain_tool("issue_refund", "refund R-9 issued")])  # fmt: skip
    billing = team("billing", [[("get_invoice", {"query": "C-1"})], [delegate("refunds", "Refund INV-7.")],
                               "INV-7 refunded: R-9."],
                   [refunds], [plain_tool("get_invoice", "INV-7: 40 EUR, paid twice")])  # fmt: skip
    triage = team("triage", [[("lookup_customer", {"query": "Ada"})],
                             [delegate("billing", "C-1 was charged twice.")], "Refund R-9 is on its way."],
                  [billing], [plain_tool("lookup_customer", "C-1, Ada")])  # fmt: skip
    recorder.start()
    output = triage.run("I was charged twice.")
    truth = truth_of(output)
    assert [i["agent"] for i in truth.invocations] == ["triage", "billing", "refunds"], truth
    write(recorder, "handoff_chain",
          "Nested teams: the triage team's leader delegates to its member the billing team "
          "(delegate_task_to_member), whose leader delegates to its member the refunds agent. "
          "Each member returns its answer to its leader.", output, truth)  # fmt: skip


def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = agent("specialist", [[("search_kb", {"query": "router"})], "Reset the router (KB-12)."],
                       [plain_tool("search_kb", "KB-12: reset the router")])  # fmt: skip

    def ask_specialist(request: str) -> str:
        output = specialist.run(request)
        INNER["specialist"] = output
        return str(output.content)

    support = agent("support", [[("ask_specialist", {"request": "The router blinks red."})],
                                "The specialist says: reset the router (KB-12)."],
                    [tool(name="ask_specialist", description="Ask the specialist.")(ask_specialist)])  # fmt: skip
    triage = team("triage", [[delegate("support", "Router blinks red.")], "Reset the router (KB-12)."],
                  [support])  # fmt: skip
    recorder.start()
    output = triage.run("My router blinks red.")
    truth = truth_of(output, {"ask_specialist": "specialist"})
    assert [i["agent"] for i in truth.invocations] == ["triage", "support", "specialist"], truth
    write(recorder, "handoff_then_tool_agent",
          "The triage team's leader delegates to support; support calls specialist through a "
          "tool (ask_specialist) whose body runs the agent.", output, truth)  # fmt: skip


def tool_raises(recorder: Recorder) -> None:
    billing = agent("billing", [[("charge_card", {"query": "C-1"})], "The card was declined."],
                    [plain_tool("charge_card", "", raises="card declined")])  # fmt: skip
    triage = team(
        "triage", [[delegate("billing", "Charge C-1.")], "Your card was declined."], [billing]
    )
    recorder.start()
    output = triage.run("Charge my card.")
    truth = truth_of(output)
    assert truth.invocations[1]["tools"] == [{"name": "charge_card", "ok": False}], (
        truth.invocations
    )
    write(recorder, "tool_raises",
          "billing's tool raises; Agno catches it (tool_call_error) and gives the error to "
          "billing's model, which answers: billing and the run end well, only the tool failed.",
          output, truth)  # fmt: skip


def parallel_delegates(recorder: Recorder) -> None:
    helpers = [
        agent("flights", [[("search_flights", {"query": "Lisbon"})], "TP-101 at 9:00"],
              [plain_tool("search_flights", "TP-101 at 9:00")]),
        agent("hotels", [[("search_hotels", {"query": "Lisbon"})], "Hotel Tejo"],
              [plain_tool("search_hotels", "Hotel Tejo")]),
        agent("cars", [[("rent_car", {"query": "Lisbon"})], "No car left."],
              [plain_tool("rent_car", "", raises="no cars left")]),
    ]  # fmt: skip
    coordinator = team("coordinator", [[delegate(h.name, "Lisbon") for h in helpers],
                                       "Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented."],
                       helpers)  # fmt: skip
    recorder.start()
    output = coordinator.run("Plan my Lisbon trip.")
    truth = truth_of(output)
    assert [i["agent"] for i in truth.invocations] == [
        "coordinator",
        "flights",
        "hotels",
        "cars",
    ], truth
    write(recorder, "parallel_delegates",
          "The coordinator team's leader delegates to three members in one model turn. cars' "
          "tool raises, Agno gives the error to cars' model, which answers. Agno's members "
          "cannot call their leader, so no loop of agents can be written.", output, truth)  # fmt: skip


def activations(output: Any) -> list[str]:
    """The agents in the order they held control, from the leader's run output: the leader,
    and after each member it delegated to (``member_responses``), the leader again."""
    ran = [output.team_id]
    for execution in output.tools or []:
        if execution.tool_name == DELEGATE and not execution.tool_call_error:
            ran += [execution.tool_args["member_id"], output.team_id]
    return ran


# Team(tool_call_limit=N) refuses the calls past N (a tool message 'Tool call limit
# reached...' with tool_call_error, no ToolExecution) and the leader's model answers. A
# recording of it would hold no span of the refusal (no tool span, and the scripted model
# writes no LLM span): nothing tracekit could tell it by, so it is not recorded.
def delegating(times: int, then: str) -> list[Any]:
    return [*([delegate("billing", "Who handles this?")] for _ in range(times)), then]


def loop_ok(recorder: Recorder) -> None:
    billing = agent("billing", ["INV-7: 40 EUR."] * 3)
    triage = team("triage", delegating(3, "Your invoice is 40 EUR."), [billing])
    recorder.start()
    output = triage.run("How much is my invoice?")
    truth = truth_of(output)
    ran = activations(output)
    assert ran == ["triage", "billing"] * 3 + ["triage"], ran
    circle, closures = circle_of(ran)
    recorder.write(
        "loop_ok",
        note="The triage team's leader delegates to billing three times (one model turn "
        "each), then answers. The sequence is the leader's own tools and member_responses.",
        result={"final_output": str(output.content), "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
        loop=Loop("ok", circle, None, closures),
    )


def main() -> None:
    provider, exporter = memory_provider("agno-recording")
    AgnoInstrumentor().instrument(tracer_provider=provider)
    recorder = Recorder(
        "agno", "agno", instrumented_by("openinference-instrumentation-agno"), exporter
    )
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, parallel_delegates, loop_ok]
    ):  # fmt: skip
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
