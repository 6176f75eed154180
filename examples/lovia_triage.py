"""lovia, traced by tracekit: triage hands off to billing, billing asks refunds.

A real lovia run with its offline ``ScriptedProvider`` (no model key): the
handoff is a ``transfer_to_billing`` tool call, refunds is an agent used as a
tool (``ask_refunds``). ``LoviaTracer`` turns lovia's spans into the tree.

    python examples/lovia_triage.py
    tracekit tree lovia_triage.jsonl
"""

from __future__ import annotations

import asyncio
import sys

from _standin import parser, wrote

try:
    from lovia import Agent, Runner, tool
    from lovia.testing import ScriptedProvider, call, text
except ImportError:  # one line that says what to install
    sys.exit(
        "examples/lovia_triage.py needs lovia: pip install 'tracekit-agents[lovia]'"
        " (in a clone of tracekit: .venv/bin/pip install -e '.[lovia]')"
    )

from tracekit import AgentTracer, JsonlSink
from tracekit.sdk.integrations.lovia import LoviaTracer


@tool
def lookup_invoice(order: str) -> str:
    """Look up the invoice of an order."""
    return f"order {order}: charged twice"


def agents() -> Agent[None]:
    """The three desks, each with a scripted model (a fresh script per run)."""
    refunds = Agent(
        name="refunds",
        instructions="Decide refunds.",
        model=ScriptedProvider([text("Refund of 49 EUR approved.")]),
    )
    billing = Agent(
        name="billing",
        instructions="Handle billing issues.",
        model=ScriptedProvider(
            [
                call("lookup_invoice", {"order": "10248"}),
                call("ask_refunds", {"input": "Order 10248 was charged twice."}),
                text("You will get 49 EUR back."),
            ]
        ),
        tools=[lookup_invoice, refunds.as_tool(description="Decide a refund.")],
    )
    return Agent(
        name="triage",
        instructions="Route the user to the right desk.",
        model=ScriptedProvider([call("transfer_to_billing", {"reason": "double charge"})]),
        handoffs=[billing],
    )


def main() -> None:
    opts = parser(
        __doc__.splitlines()[0], "lovia_triage.jsonl", "I was charged twice."
    ).parse_args()
    with AgentTracer(JsonlSink(opts.out)) as tk:
        result = asyncio.run(Runner.run(agents(), opts.question, tracer=LoviaTracer(tk)))
    wrote(opts.out)
    print(f"{result.final_agent.name}: {result.output}")


if __name__ == "__main__":
    main()
