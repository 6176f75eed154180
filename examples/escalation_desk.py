"""The escalation desk: a front desk hands over to billing, which delegates again.

The front desk's ``hand_over`` node always goes to billing (a static flow
node); billing's ``escalate`` node picks refunds or invoices (a dynamic agent
node, allow-listed). A desk billing may not call is refused by name
(``AGENT_NOT_ALLOWED``) and routed to an apology, as the seed's ``onError``.

    python examples/escalation_desk.py "I was charged twice for order 10248"
    python examples/escalation_desk.py --send-to invoices "Send my invoice again"
    python examples/escalation_desk.py --send-to payments "Move my card"
    tracekit tree escalation_desk.jsonl
"""

from __future__ import annotations

from _standin import choose, parser, think, wrote

from tracekit import AgentError, AgentTracer, Guards, JsonlSink

REGISTRY = ("front_desk", "billing", "refunds", "invoices", "payments")
BILLING_MAY_CALL = ("refunds", "invoices")


def refunds(tk: AgentTracer, question: str) -> str:
    with tk.step("decide"):
        think()
        return "refund of order 10248 approved"


def invoices(tk: AgentTracer, question: str) -> str:
    with tk.step("find_invoice"):
        think()
    with tk.step("resend"):
        return "invoice sent again"


DESKS = {"refunds": refunds, "invoices": invoices}


def billing(tk: AgentTracer, question: str, send_to: str | None) -> str:
    with tk.step("sort"):
        think()
        desk = send_to or choose(question, {"refunds": ["charged", "refund"]}, "invoices")
    try:
        with tk.delegate(desk, node="escalate", allowed=BILLING_MAY_CALL):
            answer = DESKS[desk](tk, question)
    except AgentError as refusal:  # onError: an apology, never a silent fallback
        with tk.step("apologise"):
            return f"Sorry, billing cannot pass this to {desk} ({refusal.code})."
    with tk.step("summarise"):
        return f"Billing: {answer}."


def front_desk(tk: AgentTracer, question: str, send_to: str | None) -> str:
    with tk.run("front_desk"), tk.delegate("billing", node="hand_over"):
        return billing(tk, question, send_to)


def main() -> None:
    args = parser(
        __doc__.splitlines()[0], "escalation_desk.jsonl", "I was charged twice for order 10248"
    )
    args.add_argument("--send-to", help="make billing escalate to this desk")
    opts = args.parse_args()
    with AgentTracer(JsonlSink(opts.out), guards=Guards(registry=REGISTRY)) as tk:
        print(front_desk(tk, opts.question, opts.send_to))
    wrote(opts.out)


if __name__ == "__main__":
    main()
