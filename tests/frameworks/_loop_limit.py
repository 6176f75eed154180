"""A langgraph-swarm ping-pong that LangGraph itself stops: its ``recursion_limit``.

Shared by the recordings of langgraph-swarm through other instrumentations
(``record_<instrumentation>_langgraph_swarm.py``). triage and billing hand the
conversation to each other with no end; the parent graph raises
``GraphRecursionError`` when its step count passes the limit. The truth is read
from the swarm's own checkpointed messages (``record_langgraph_swarm.loop_truth``,
as for the swarm's own limit recordings): every node that ran ended by handing off,
so no agent raised; the run did. The last handoff tool ran (its ToolMessage is in
the state) but its target never did: a tool of the last agent.
"""

from __future__ import annotations

from typing import Any

from _recording import Loop, Recorder, circle_of, started
from langgraph.checkpoint.memory import InMemorySaver
from record_langgraph import SPOKE, call
from record_langgraph_swarm import agent, handoff, loop_truth

LIMIT = 6  # parent-graph steps: one a node, so six invocations, then the framework stops it


def loop_limit(recorder: Recorder) -> None:
    from langgraph_swarm import create_swarm

    agents = [
        agent("triage", [[call("transfer_to_billing")] for _ in range(10)], [handoff("billing")]),
        agent("billing", [[call("transfer_to_triage")] for _ in range(10)], [handoff("triage")]),
    ]
    graph = create_swarm(agents, default_active_agent="triage").compile(
        checkpointer=InMemorySaver(), name="swarm"
    )
    config: Any = {"configurable": {"thread_id": "t1"}, "recursion_limit": LIMIT}
    recorder.start()
    started("triage")
    try:
        graph.invoke({"messages": [("user", "Who handles my invoice?")]}, config)
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("the run was meant to hit the recursion limit")
    assert raised.startswith("GraphRecursionError"), raised
    messages = list(graph.get_state(config).values["messages"])
    truth, agents_run = loop_truth(messages)  # no node raised: the framework stopped the run
    assert agents_run[:3] == ["triage", "billing", "triage"], agents_run
    recorder.write(
        "loop_limit",
        note=(
            "triage and billing hand off to each other (transfer_to_<agent>) with no end; "
            f"the swarm runs with recursion_limit={LIMIT} and LangGraph raises "
            "GraphRecursionError: no agent failed, the framework refused the loop."
        ),
        result={
            "final_output": None,
            "last_agent": agents_run[-1],
            "raised": raised.splitlines()[0],
        },
        run_ok=False,
        truth=truth,
        loop=Loop("failed:recursion", *circle_of(agents_run)[:1], "GraphRecursionError",
                  circle_of(agents_run)[1]),
    )  # fmt: skip
    SPOKE.clear()
