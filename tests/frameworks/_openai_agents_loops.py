"""Two OpenAI Agents SDK loops: a ping-pong that ends, and one the SDK stops (``max_turns``).

Shared by the recordings of the OpenAI Agents SDK through other instrumentations
(``record_<instrumentation>_openai_agents.py``). triage and billing hand off to each
other with the SDK's own handoffs (``Agent.handoffs``, the model calling
``transfer_to_<agent>``). The truth is the SDK's own: the run's items
(``HandoffOutputItem``: source and target agent), from its result or, when it
raised ``MaxTurnsExceeded``, from the run data the exception carries.
"""

from __future__ import annotations

from typing import Any

from _recording import Loop, Recorder, Truth, circle_of
from agents import Agent, HandoffOutputItem, MaxTurnsExceeded, Runner
from record_openai_agents import ScriptedModel, call, check_log, plain_tool, say

#: How the truth names a handoff's node (the recording's handoff span); a recorder
#: whose instrumentation names it otherwise sets its own.
HANDOFF_NODE = "handoff to {}"
LIMIT = 5  # model turns: the SDK raises MaxTurnsExceeded past them


def truth_of(items: list[Any], first: str, tools: dict[str, list[str]]) -> Truth:
    """One invocation for the first agent and one a handoff, with each visit's plain tools."""
    truth = Truth()
    current = truth.agent(first)
    for name in tools.get(first, []):
        truth.tool(current, name)
    visits = {first: 1}
    for item in items:
        if isinstance(item, HandoffOutputItem):
            target = item.target_agent.name
            current = truth.agent(target, current, "handoff", HANDOFF_NODE.format(target))
            visits[target] = visits.get(target, 0) + 1
            if visits[target] == 1:
                for name in tools.get(target, []):
                    truth.tool(current, name)
    return truth


def pair(triage_turns: list[Any], billing_turns: list[Any]) -> Agent[Any]:
    billing = Agent(
        name="billing",
        instructions="Handle invoices.",
        tools=[plain_tool("billing", "get_invoice", "INV-7: 40 EUR")],
        model=ScriptedModel("scripted-billing", *billing_turns),
    )
    triage = Agent(
        name="triage",
        instructions="Route the customer.",
        handoffs=[billing],
        model=ScriptedModel("scripted-triage", *triage_turns),
    )
    billing.handoffs = [triage]
    return triage


async def loop(recorder: Recorder) -> None:
    triage = pair(
        [[call("transfer_to_billing")], [say("Your invoice INV-7 is 40 EUR.")]],
        [[call("get_invoice", query="C-1")], [call("transfer_to_triage")]],
    )
    recorder.start()
    result = await Runner.run(triage, "How much is my invoice?")
    assert result.final_output == "Your invoice INV-7 is 40 EUR.", result.final_output
    assert result.last_agent.name == "triage"
    check_log([("billing", "get_invoice", True)])
    truth = truth_of(result.new_items, "triage", {"billing": ["get_invoice"]})
    agents = [i["agent"] for i in truth.invocations]
    assert agents == ["triage", "billing", "triage"], agents
    recorder.write(
        "loop",
        note=(
            "triage hands off to billing, which hands back to triage (Agent.handoffs both "
            "ways): the SDK allows the loop; triage answers in its second invocation."
        ),
        result={"final_output": result.final_output, "last_agent": "triage", "raised": None},
        run_ok=True,
        truth=truth,
        loop=Loop("ok", *circle_of(agents)[:1], None, circle_of(agents)[1]),
    )


async def loop_limit(recorder: Recorder) -> None:
    triage = pair(
        [[call("transfer_to_billing")] for _ in range(LIMIT)],
        [[call("transfer_to_triage")] for _ in range(LIMIT)],
    )
    recorder.start()
    try:
        await Runner.run(triage, "Who handles my invoice?", max_turns=LIMIT)
    except MaxTurnsExceeded as exc:
        raised = f"{type(exc).__name__}: {exc}"
        items = list(exc.run_data.new_items) if exc.run_data else []
        last = exc.run_data.last_agent.name if exc.run_data else None
    else:
        raise AssertionError("the run was meant to exceed its turns")
    truth = truth_of(items, "triage", {})
    agents = [i["agent"] for i in truth.invocations]
    assert agents[:3] == ["triage", "billing", "triage"] and agents[-1] == last, (agents, last)
    truth.failed(len(agents) - 1)  # the SDK raised in the turn of the agent then running
    recorder.write(
        "loop_limit",
        note=(
            "triage and billing hand off to each other with no end; Runner.run(max_turns="
            f"{LIMIT}) raises MaxTurnsExceeded in the turn of the agent then running (its "
            "last_agent): the SDK refused the loop; no tool and no model failed."
        ),
        result={"final_output": None, "last_agent": last, "raised": raised},
        run_ok=False,
        truth=truth,
        loop=Loop("failed:recursion", *circle_of(agents)[:1], "MaxTurnsExceeded",
                  circle_of(agents)[1]),
    )  # fmt: skip
