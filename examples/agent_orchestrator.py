"""The orchestrator: one delegation, three desks, a stand-in model choosing.

The registry holds a payments desk that the orchestrator's allow-list does
not: being registered is not being allowed.

    python examples/agent_orchestrator.py "Who are our largest customers?"
    python examples/agent_orchestrator.py "Summarise the refund policy."
    python examples/agent_orchestrator.py "What does this company do?"
    tracekit tree agent_orchestrator.jsonl
"""

from __future__ import annotations

from collections.abc import Callable

from _standin import choose, parser, think, wrote

from tracekit import AgentTracer, Guards, JsonlSink

REGISTRY = ("orchestrator", "sql", "documents", "general", "payments")
MAY_CALL = ("sql", "documents", "general")
ROUTES = {"sql": ["customer", "orders", "revenue"], "documents": ["policy", "summarise"]}


def sql(tk: AgentTracer, question: str) -> str:
    with tk.step("write_query"):
        think()
    with tk.step("run_query"):
        think()
    with tk.step("say"):
        return "ACME, Globex and Initech."


def documents(tk: AgentTracer, question: str) -> str:
    with tk.step("search"):
        think()
    with tk.step("say"):
        return "Refunds within 30 days."


def general(tk: AgentTracer, question: str) -> str:
    with tk.step("say"):
        return "We sell anvils."


DESKS: dict[str, Callable[[AgentTracer, str], str]] = {
    "sql": sql,
    "documents": documents,
    "general": general,
}


def orchestrator(tk: AgentTracer, question: str) -> str:
    with tk.run("orchestrator"):
        with tk.step("list_desks"):
            catalogue = ", ".join(MAY_CALL)  # only what this node may call is offered
        with tk.step("decide"):
            think()
            desk = choose(question, ROUTES, "general")
            assert desk in catalogue
        with tk.delegate(desk, node="delegate", allowed=MAY_CALL):
            answer = DESKS[desk](tk, question)
        with tk.step("reply"):
            return answer


def main() -> None:
    opts = parser(
        __doc__.splitlines()[0], "agent_orchestrator.jsonl", "Who are our largest customers?"
    ).parse_args()
    with AgentTracer(JsonlSink(opts.out), guards=Guards(registry=REGISTRY)) as tk:
        print(orchestrator(tk, opts.question))
    wrote(opts.out)


if __name__ == "__main__":
    main()
