"""Record LangGraph through openinference-instrumentation-langchain, offline.

Run in the framework's own environment (``make record-frameworks`` does):
``.frameworks/langgraph/bin/python tests/frameworks/record_langgraph.py``.
Each agent is a prebuilt ReAct agent (``create_react_agent``) whose model is a
``BaseChatModel`` (LangChain's own model interface) playing the turns written
below; every connection is refused.

LangGraph has no handoff object: a handoff is its documented idiom, a tool that
returns ``Command(goto=<agent>, graph=Command.PARENT)`` so the parent graph moves
to the target agent's node. Agent-as-tool is a tool whose body invokes the agent.
"""

from __future__ import annotations

import sys
import warnings
from itertools import count
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).parent))

from _recording import (
    Recorder,
    Truth,
    go_offline,
    in_start_order,
    instrumented_by,
    memory_provider,
    started,
)

go_offline()
warnings.filterwarnings("ignore", category=DeprecationWarning)

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import InjectedState, ToolNode, create_react_agent  # noqa: E402
from langgraph.types import Command  # noqa: E402
from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

_ids = count(1)
LOG: list[tuple[str, str, bool]] = []  # (agent, tool, ok): what the plain tools saw happen
SPOKE: list[str] = []  # the agents whose model gave a final text answer, in order
SEEN: dict[str, list[str]] = {}  # agent -> the tool results its model was given


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """Answers each request with the next turn: a text, or a list of tool calls."""

    agent: str
    turns: list[Any]
    model_name: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name
        }  # the invocation parameters carry it, as real models do

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        SEEN.setdefault(self.agent, []).extend(
            str(m.content) for m in messages if isinstance(m, ToolMessage)
        )
        if not self.turns:
            raise AssertionError(f"{self.agent}'s scripted model ran out of turns")
        turn = self.turns.pop(0)
        usage = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}
        if isinstance(turn, str):
            SPOKE.append(self.agent)
            message = AIMessage(content=turn, usage_metadata=usage)
        else:
            message = AIMessage(content="", tool_calls=turn, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self  # the script already knows which tools it calls


def model(agent: str, *turns: Any) -> ScriptedChatModel:
    return ScriptedChatModel(agent=agent, turns=list(turns), model_name=f"scripted-{agent}")


def plain_tool(agent: str, name: str, answer: str, *, raises: str | None = None) -> StructuredTool:
    """A plain tool that logs its call; with ``raises`` it raises."""

    def run(query: str) -> str:
        LOG.append((agent, name, raises is None))
        if raises is not None:
            raise RuntimeError(raises)
        return answer

    return StructuredTool.from_function(run, name=name, description=f"{name} for {agent}.")


def handoff_tool(target: str) -> Any:
    """The documented LangGraph handoff: a tool returning Command(goto=target, graph=PARENT)."""

    @tool(f"transfer_to_{target}", description=f"Hand the conversation to {target}.")
    def transfer(
        state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> Command:
        done = ToolMessage(
            content=f"Transferred to {target}",
            name=f"transfer_to_{target}",
            tool_call_id=tool_call_id,
        )
        return Command(
            goto=target, graph=Command.PARENT, update={"messages": [*state["messages"], done]}
        )

    return transfer


def agent_tool(target: Any, name: str) -> StructuredTool:
    """A tool whose body invokes the agent ``target`` and returns its last message."""

    def ask(request: str) -> str:
        started(target.name)
        state = target.invoke({"messages": [("user", request)]})
        return str(state["messages"][-1].content)

    return StructuredTool.from_function(ask, name=name, description=f"Ask {target.name}.")


def swarm(*agents: Any) -> Any:
    """The parent graph: one node a subgraph agent, starting at the first."""
    graph = StateGraph(MessagesState)
    for agent in agents:
        graph.add_node(agent.name, agent)
    graph.add_edge(START, agents[0].name)
    return graph.compile(name="desk")


def check(expected_log: list[tuple[str, str, bool]], spoke: list[str]) -> None:
    assert sorted(LOG) == sorted(expected_log), LOG
    assert spoke == SPOKE, SPOKE
    LOG.clear()
    SPOKE.clear()


def handoff_chain(recorder: Recorder) -> None:
    refunds = create_react_agent(
        model("refunds", [call("issue_refund", query="INV-7")], "Refund R-9 issued for INV-7."),
        [plain_tool("refunds", "issue_refund", "refund R-9 issued")],
        name="refunds",
    )
    billing = create_react_agent(
        model("billing", [call("get_invoice", query="C-1")], [call("transfer_to_refunds")]),
        [
            plain_tool("billing", "get_invoice", "INV-7: 40 EUR, paid twice"),
            handoff_tool("refunds"),
        ],
        name="billing",
    )
    triage = create_react_agent(
        model("triage", [call("lookup_customer", query="Ada")], [call("transfer_to_billing")]),
        [plain_tool("triage", "lookup_customer", "C-1, Ada"), handoff_tool("billing")],
        name="triage",
    )
    recorder.start()
    state = swarm(triage, billing, refunds).invoke({"messages": [("user", "I was charged twice.")]})
    final = state["messages"][-1].content
    assert final == "Refund R-9 issued for INV-7.", final
    check(
        [
            ("triage", "lookup_customer", True),
            ("billing", "get_invoice", True),
            ("refunds", "issue_refund", True),
        ],
        ["refunds"],
    )
    truth = Truth()
    t = truth.agent("triage")
    truth.tool(t, "lookup_customer")
    b = truth.agent("billing", t, "handoff", "transfer_to_billing")
    truth.tool(b, "get_invoice")
    r = truth.agent("refunds", b, "handoff", "transfer_to_refunds")
    truth.tool(r, "issue_refund")
    recorder.write(
        "handoff_chain",
        note=(
            "Three create_react_agent subgraphs as nodes of one parent StateGraph ('desk'); a "
            "handoff is a tool returning Command(goto=<agent>, graph=Command.PARENT)."
        ),
        result={"final_output": final, "last_agent": "refunds", "raised": None},
        run_ok=True,
        truth=truth,
    )


def handoff_then_tool_agent(recorder: Recorder) -> None:
    specialist = create_react_agent(
        model("specialist", [call("search_kb", query="router")], "Reset the router (KB-12)."),
        [plain_tool("specialist", "search_kb", "KB-12: reset the router")],
        name="specialist",
    )
    support = create_react_agent(
        model(
            "support",
            [call("ask_specialist", request="The router blinks red.")],
            "The specialist says: reset the router (KB-12).",
        ),
        [agent_tool(specialist, "ask_specialist")],
        name="support",
    )
    triage = create_react_agent(
        model("triage", [call("transfer_to_support")]), [handoff_tool("support")], name="triage"
    )
    recorder.start()
    state = swarm(triage, support).invoke({"messages": [("user", "My router blinks red.")]})
    final = state["messages"][-1].content
    assert final == "The specialist says: reset the router (KB-12).", final
    assert any("KB-12" in s for s in SEEN["support"]), SEEN
    check([("specialist", "search_kb", True)], ["specialist", "support"])
    truth = Truth()
    t = truth.agent("triage")
    s = truth.agent("support", t, "handoff", "transfer_to_support")
    k = truth.agent("specialist", s, "delegate", "ask_specialist")
    truth.tool(k, "search_kb")
    recorder.write(
        "handoff_then_tool_agent",
        note=(
            "triage hands off to support with Command(goto='support', graph=Command.PARENT); "
            "support calls specialist through a tool (ask_specialist) that invokes the agent."
        ),
        result={"final_output": final, "last_agent": "support", "raised": None},
        run_ok=True,
        truth=truth,
    )


def tool_raises(recorder: Recorder) -> None:
    billing = create_react_agent(
        model("billing", [call("charge_card", query="C-1")]),
        [plain_tool("billing", "charge_card", "", raises="card declined")],
        name="billing",
    )
    triage = create_react_agent(
        model("triage", [call("transfer_to_billing")]), [handoff_tool("billing")], name="triage"
    )
    recorder.start()
    try:
        swarm(triage, billing).invoke({"messages": [("user", "Charge my card.")]})
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("the run was meant to raise")
    assert raised == "RuntimeError: card declined", raised
    check([("billing", "charge_card", False)], [])
    truth = Truth()
    t = truth.agent("triage")
    b = truth.agent("billing", t, "handoff", "transfer_to_billing")
    truth.tool(b, "charge_card", ok=False)
    truth.failed(b)
    recorder.write(
        "tool_raises",
        note=(
            "billing's tool raises; the prebuilt ToolNode's default error handling re-raises "
            "anything but a bad tool call, so the graph run raises. triage's node had already "
            "ended (the Command moved the parent graph on) without raising."
        ),
        result={"final_output": None, "last_agent": "billing", "raised": raised},
        run_ok=False,
        truth=truth,
    )


def parallel_delegates(recorder: Recorder) -> None:
    def delegate(name: str, tool_name: str, answer: str, *, raises: str | None = None) -> Any:
        turns: list[Any] = [[call(tool_name, query="Lisbon")]]
        if raises is None:
            turns.append(answer)
        return create_react_agent(
            model(name, *turns), [plain_tool(name, tool_name, answer, raises=raises)], name=name
        )

    helpers = [
        delegate("flights", "search_flights", "TP-101 at 9:00"),
        delegate("hotels", "search_hotels", "Hotel Tejo"),
        delegate("cars", "rent_car", "", raises="no cars left"),
    ]
    coordinator = create_react_agent(
        model(
            "coordinator",
            [call(f"ask_{h.name}", request="Lisbon") for h in helpers],
            "Booked TP-101 at 9:00 and Hotel Tejo; no car could be rented.",
        ),
        ToolNode([agent_tool(h, f"ask_{h.name}") for h in helpers], handle_tool_errors=True),
        name="coordinator",
    )
    recorder.start()
    state = coordinator.invoke({"messages": [("user", "Plan my Lisbon trip.")]})
    final = state["messages"][-1].content
    assert final.startswith("Booked TP-101"), final
    assert any("no cars left" in s for s in SEEN["coordinator"]), SEEN
    # The helpers run concurrently: which of them answers first varies.
    assert sorted(SPOKE[:2]) == ["flights", "hotels"] and SPOKE[2:] == ["coordinator"], SPOKE
    check(
        [
            ("flights", "search_flights", True),
            ("hotels", "search_hotels", True),
            ("cars", "rent_car", False),
        ],
        list(SPOKE),
    )
    truth = Truth()
    c = truth.agent("coordinator")
    plain = {"flights": "search_flights", "hotels": "search_hotels", "cars": "rent_car"}
    for name in in_start_order(list(plain)):
        tool_name = plain[name]
        i = truth.agent(name, c, "delegate", f"ask_{name}")
        truth.tool(i, tool_name, ok=name != "cars")
        if name == "cars":
            truth.failed(i)
    recorder.write(
        "parallel_delegates",
        note=(
            "The coordinator's model calls three agent tools in one message; the ToolNode runs "
            "them concurrently. cars' tool raises out of cars; the coordinator's "
            "ToolNode(handle_tool_errors=True) gives the error to its model, which answers."
        ),
        result={"final_output": final, "last_agent": "coordinator", "raised": None},
        run_ok=True,
        truth=truth,
    )


def main() -> None:
    provider, exporter = memory_provider("langgraph-recording")
    LangChainInstrumentor().instrument(tracer_provider=provider)
    recorder = Recorder(
        "langgraph",
        "langgraph",
        instrumented_by("openinference-instrumentation-langchain"),
        exporter,
    )
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, parallel_delegates]
    ):
        SEEN.clear()
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
