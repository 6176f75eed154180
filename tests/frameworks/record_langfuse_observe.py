"""Record a plain Python multi-agent app traced with the Langfuse SDK's ``@observe``, offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/langfuse_observe/bin/python tests/frameworks/record_langfuse_observe.py``.
No agent framework: the app is a desk that runs one agent at a time, each agent a
loop over its scripted model's turns (call a tool, hand off, or answer). What the
spans say comes only from Langfuse's decorators, as a user would write them:
``@observe(as_type="agent")`` on each agent, ``"tool"`` on each tool (a handoff is a
``transfer_to_<agent>`` tool, an agent called as a tool is a tool whose body runs the
agent), ``"generation"`` on the model, ``"chain"`` on the desk. The desk refuses a
handoff past its hop limit with ``LoopRefused``. The truth is the app's own log:
which agent ran, called by whom, through which tool, and what each tool did.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _langfuse_capture import LangfuseRecorder, langfuse_client
from _recording import Loop, Truth, circle_of, go_offline, instrumented_by

go_offline()
os.environ["LANGFUSE_PUBLIC_KEY"] = "pk-lf-offline"  # @observe finds the one client by its key

from langfuse import observe  # noqa: E402

MAX_HOPS = 5  # the desk's loop limit: handoffs in one run


class LoopRefused(RuntimeError):
    """The desk refused a handoff: the run passed its hop limit."""


class App:
    """Agents (name -> scripted turns, tools), a desk, and the log of what happened."""

    def __init__(self, agents: dict[str, tuple[list[Any], dict[str, Callable[..., str]]]]) -> None:
        self.agents = agents
        self.truth = Truth()
        self.hops = 0
        self.handoff: tuple[str, str] | None = None  # (target, tool) set by a transfer tool

    def desk(self, first: str, request: str) -> str:
        """Run ``first``; on each handoff, run its target; return the last answer."""

        @observe(name="desk", as_type="chain")
        def desk(request: str) -> str:
            current, caller, node = first, None, None
            while True:
                index = self.truth.agent(current, caller, "handoff" if node else None, node)
                answer = self.run_agent(current, index, request)
                if self.handoff is None:
                    return answer
                (target, node), self.handoff, caller = self.handoff, None, index
                self.hops += 1
                if self.hops > MAX_HOPS:
                    # the transfer tool ran; its target never will: a tool of this agent
                    self.truth.tool(index, node)
                    raise LoopRefused(f"{current} -> {target}: more than {MAX_HOPS} handoffs")
                current = target

        return desk(request)

    def run_agent(self, name: str, index: int, request: str) -> str:
        turns, tools = self.agents[name]

        @observe(name=name, as_type="agent")
        def agent(request: str) -> str:
            while True:
                turn = model(name, turns)
                if isinstance(turn, str):
                    return turn
                tool_name, args = turn
                if tool_name.startswith("transfer_to_"):
                    return self.transfer(tool_name)
                if tool_name.startswith("ask_"):
                    return self.ask(index, tool_name, args)
                self.call(index, tool_name, tools[tool_name], args)

        try:
            return agent(request)
        except Exception:
            self.truth.failed(index)
            raise

    def transfer(self, tool_name: str) -> str:
        @observe(name=tool_name, as_type="tool")
        def transfer() -> str:
            self.handoff = (tool_name.removeprefix("transfer_to_"), tool_name)
            return f"Transferred to {self.handoff[0]}"

        return transfer()

    def ask(self, caller: int, tool_name: str, args: dict[str, str]) -> str:
        target = tool_name.removeprefix("ask_")

        @observe(name=tool_name, as_type="tool")
        def ask(request: str) -> str:
            index = self.truth.agent(target, caller, "delegate", tool_name)
            return self.run_agent(target, index, request)

        return ask(**args)

    def call(self, index: int, name: str, fn: Callable[..., str], args: dict[str, str]) -> None:
        try:
            observe(name=name, as_type="tool")(fn)(**args)
        except Exception:
            self.truth.tool(index, name, ok=False)
            raise
        self.truth.tool(index, name)


def model(agent: str, turns: list[Any]) -> Any:
    @observe(name=f"scripted-{agent}", as_type="generation")
    def generate(agent: str) -> Any:
        if not turns:
            raise AssertionError(f"{agent}'s scripted model ran out of turns")
        return turns.pop(0)

    return generate(agent)


def answer(text: str) -> Callable[..., str]:
    def tool(query: str) -> str:
        return text

    return tool


def declined(query: str) -> str:
    raise RuntimeError("card declined")


def run(recorder: LangfuseRecorder, scenario: str, note: str, app: App, first: str,
        request: str, looped: bool = False, **extra: Any) -> None:  # fmt: skip
    recorder.start()
    raised = None
    final = None
    try:
        final = app.desk(first, request)
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
    rows = app.truth.invocations
    if looped:
        circle, closures = circle_of([row["agent"] for row in rows])
        limit = None if raised is None else raised.split(":")[0]
        outcome = "ok" if raised is None else "failed:recursion"
        extra["loop"] = Loop(outcome, circle, limit, closures)
    recorder.write(
        scenario,
        note=note,
        result={"final_output": final, "last_agent": rows[-1]["agent"], "raised": raised},
        run_ok=raised is None,
        truth=app.truth,
        **extra,
    )


def handoff_chain(recorder: LangfuseRecorder) -> None:
    app = App({
        "triage": ([("lookup_customer", {"query": "Ada"}), ("transfer_to_billing", {})],
                   {"lookup_customer": answer("C-1, Ada")}),
        "billing": ([("get_invoice", {"query": "C-1"}), ("transfer_to_refunds", {})],
                    {"get_invoice": answer("INV-7: 40 EUR")}),
        "refunds": ([("issue_refund", {"query": "INV-7"}), "Refund R-9 issued for INV-7."],
                    {"issue_refund": answer("refund R-9 issued")}),
    })  # fmt: skip
    run(recorder, "handoff_chain", "The desk runs triage, which hands off to billing "
        "(transfer_to_billing), which hands off to refunds; each agent calls one tool first.",
        app, "triage", "I was charged twice.")  # fmt: skip


def handoff_then_tool_agent(recorder: LangfuseRecorder) -> None:
    app = App({
        "triage": ([("transfer_to_support", {})], {}),
        "support": ([("ask_specialist", {"request": "The router blinks red."}),
                     "The specialist says: reset the router (KB-12)."], {}),
        "specialist": ([("search_kb", {"query": "router"}), "Reset the router (KB-12)."],
                       {"search_kb": answer("KB-12: reset the router")}),
    })  # fmt: skip
    run(recorder, "handoff_then_tool_agent", "triage hands off to support; support calls "
        "specialist through a tool (ask_specialist) whose body runs the agent.",
        app, "triage", "My router blinks red.")  # fmt: skip


def tool_raises(recorder: LangfuseRecorder) -> None:
    app = App({
        "triage": ([("transfer_to_support", {})], {}),
        "support": ([("ask_billing", {"request": "Charge C-1."})], {}),
        "billing": ([("charge_card", {"query": "C-1"})], {"charge_card": declined}),
    })  # fmt: skip
    run(recorder, "tool_raises", "triage hands off to support, which calls billing as a tool "
        "(ask_billing); billing's tool raises, nothing catches it: billing, support and the "
        "run raise.", app, "triage", "Charge my card.")  # fmt: skip


def loop(recorder: LangfuseRecorder) -> None:
    app = App({
        "triage": ([("transfer_to_billing", {}), "Your invoice INV-7 is 40 EUR."], {}),
        "billing": ([("get_invoice", {"query": "C-1"}), ("transfer_to_triage", {})],
                    {"get_invoice": answer("INV-7: 40 EUR")}),
    })  # fmt: skip
    run(recorder, "loop", "triage hands off to billing, which hands back to triage; triage "
        "answers in its second invocation.", app, "triage", "How much is my invoice?",
        looped=True)  # fmt: skip


def loop_limit(recorder: LangfuseRecorder) -> None:
    app = App({
        "triage": ([("transfer_to_billing", {}) for _ in range(5)], {}),
        "billing": ([("transfer_to_triage", {}) for _ in range(5)], {}),
    })  # fmt: skip
    run(recorder, "loop_limit", f"triage and billing hand off to each other with no end; the "
        f"desk refuses the handoff past {MAX_HOPS} (LoopRefused, raised by the desk, not by an "
        "agent).", app, "triage", "Who handles my invoice?", looped=True)  # fmt: skip


def main() -> None:
    client, provider, exporter = langfuse_client("langfuse-observe-recording")
    recorder = LangfuseRecorder(
        "langfuse_observe", "langfuse", instrumented_by("langfuse") + " (@observe)", exporter
    )
    recorder.client = client
    for scenario in recorder.chosen(
        [handoff_chain, handoff_then_tool_agent, tool_raises, loop, loop_limit]
    ):
        scenario(recorder)
    client.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
