"""A circle of agents: orders asks billing, billing asks orders again.

Each desk delegates exactly as its own flow says; together they go round.
The recursion guard refuses the second ``orders`` with ``AGENT_RECURSION``
naming the circle, the error travels up unchanged (never wrapped as
``AGENT_FAILED``), and the run ends with ``failure: "delegation"``.

    python examples/recursion_circle.py
    tracekit tree recursion_circle.jsonl
"""

from __future__ import annotations

from _standin import parser, think, wrote

from tracekit import AgentRecursionError, AgentTracer, Guards, JsonlSink


def orders(tk: AgentTracer, question: str) -> str:
    with tk.step("check_order"):
        think()
    with tk.delegate("billing", node="ask_billing"):
        return billing(tk, question)


def billing(tk: AgentTracer, question: str) -> str:
    with tk.step("check_payment"):
        think()
    # billing's flow asks orders to confirm the order: that closes the circle
    with tk.delegate("orders", node="confirm_order"):
        return orders(tk, question)


def main() -> None:
    opts = parser(
        __doc__.splitlines()[0], "recursion_circle.jsonl", "Where is order 10248?"
    ).parse_args()
    with AgentTracer(JsonlSink(opts.out), guards=Guards()) as tk:
        try:
            with tk.run("orders"):
                orders(tk, opts.question)
        except AgentRecursionError as err:
            print(f"refused: {err} ({err.code}, chain {err.chain})")
    wrote(opts.out)


if __name__ == "__main__":
    main()
