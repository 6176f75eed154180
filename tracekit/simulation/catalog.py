"""The simulated fleet: services, their agents, who may call whom.

Each service is a registry in the seed's sense: an entry agent, and for each
agent the steps it takes and the agents on its allow-list. The allow-lists
contain circles of two and three agents on purpose, so that a recursion
failure is something a run can really walk into.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "FAILURE_CODES",
    "GHOST_AGENTS",
    "SERVICES",
    "TOOL_STEPS",
    "AgentSpec",
    "Service",
]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent: the steps it takes and the agents it may call."""

    name: str
    steps: tuple[str, ...]
    calls: tuple[str, ...] = ()
    flakiness: float = 1.0  # weight of this agent as the origin of a failure


@dataclass(frozen=True, slots=True)
class Service:
    """A deployment: its entry agent, its registry, and how deep it lets calls go."""

    name: str
    entry: str
    agents: dict[str, AgentSpec]
    max_depth: int = 4
    weight: float = 1.0


def _service(name: str, weight: float, *specs: AgentSpec) -> Service:
    return Service(name, specs[0].name, {s.name: s for s in specs}, weight=weight)


SERVICES: Final[tuple[Service, ...]] = (
    _service(
        "support-desk",
        3.0,
        AgentSpec(
            "triage",
            ("classify", "lookup_customer", "reply"),
            ("billing", "tech-support", "knowledge-base"),
        ),
        AgentSpec(
            "billing",
            ("fetch_invoice", "check_payment", "summarise"),
            ("refunds", "invoices", "knowledge-base"),
            1.5,
        ),
        AgentSpec("refunds", ("decide_refund", "issue_refund"), ("billing", "invoices"), 2.0),
        AgentSpec("invoices", ("render_invoice", "send_email"), ("billing", "knowledge-base")),
        AgentSpec(
            "tech-support",
            ("diagnose", "search_tickets", "answer"),
            ("knowledge-base", "triage"),
            1.2,
        ),
        AgentSpec("knowledge-base", ("embed_query", "retrieve", "rerank"), (), 0.6),
    ),
    _service(
        "research-hub",
        2.0,
        AgentSpec("planner", ("plan", "decide", "compose"), ("researcher", "writer", "critic")),
        AgentSpec(
            "researcher", ("search_web", "read_page", "take_notes"), ("web-search", "summarizer")
        ),
        AgentSpec("web-search", ("query_engine", "fetch_results"), (), 2.5),
        AgentSpec("summarizer", ("chunk", "summarise"), (), 0.8),
        AgentSpec("writer", ("outline", "draft", "polish"), ("critic", "summarizer")),
        AgentSpec("critic", ("review", "score"), ("writer", "planner"), 1.3),
    ),
    _service(
        "data-desk",
        2.0,
        AgentSpec(
            "orchestrator", ("list_desks", "decide", "reply"), ("sql", "documents", "general")
        ),
        AgentSpec("sql", ("write_query", "run_query", "say"), ("charts", "documents"), 2.0),
        AgentSpec("documents", ("search_docs", "quote"), ("general",)),
        AgentSpec("general", ("think", "answer"), ("orchestrator",), 0.7),
        AgentSpec("charts", ("pick_chart", "render_chart"), ("sql",), 1.1),
    ),
)

#: Steps written as OTLP ``execute_tool`` spans (the rest are plain spans).
TOOL_STEPS: Final = frozenset(
    {
        "lookup_customer",
        "fetch_invoice",
        "check_payment",
        "issue_refund",
        "send_email",
        "search_tickets",
        "retrieve",
        "search_web",
        "read_page",
        "query_engine",
        "fetch_results",
        "run_query",
        "search_docs",
        "render_chart",
    }
)

#: Names an agent may ask for that no registry holds.
GHOST_AGENTS: Final = ("payments", "admin", "legacy-crm")

#: Ordinary failure codes of a child that threw, with their messages.
FAILURE_CODES: Final[tuple[tuple[str, str], ...]] = (
    ("TOOL_ERROR", "a tool raised: connection reset by peer"),
    ("TIMEOUT", "the step took longer than 30s"),
    ("RATE_LIMITED", "the model provider answered 429"),
    ("MODEL_ERROR", "the model returned no usable answer"),
    ("SCHEMA_VIOLATION", "the output did not match the declared contract"),
    ("UPSTREAM_UNAVAILABLE", "upstream answered 503"),
)
