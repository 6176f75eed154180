"""Record langgraph-swarm through the Langfuse SDK's LangChain callback handler, offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/langfuse_langgraph_swarm/bin/python
tests/frameworks/record_langfuse_langgraph_swarm.py``. The scenarios, the scripted
models and the truth (read from the swarm's own checkpointed messages) are
``record_langgraph_swarm.py``'s, with ``_loop_limit.py``'s loop that LangGraph stops;
only the instrumentation differs: ``langfuse.langchain.CallbackHandler`` on every run
(a LangChain configure hook, as if passed in each ``config["callbacks"]``), whose
spans are the Langfuse SDK's own (``langfuse.observation.type``: agent, tool, chain,
generation, span). The client is given its own tracer provider and an in-memory
span exporter: what it would send to a Langfuse server is what is recorded, and its
base URL is the closed port, so nothing leaves the machine.
"""

from __future__ import annotations

import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import record_langgraph_swarm as scenarios  # offline from here on
from _loop_limit import loop_limit
from _recording import CLOSED, Recorder, instrumented_by
from langchain_core.tracers.context import register_configure_hook
from langfuse import Langfuse
from langfuse.langchain import CallbackHandler
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_HANDLER: ContextVar[Any] = ContextVar("langfuse_handler", default=None)
register_configure_hook(_HANDLER, inheritable=True)


class LangfuseRecorder(Recorder):
    """A recorder that flushes the Langfuse client's span processor before it writes."""

    client: Any = None

    def write(self, scenario: str, **kwargs: Any) -> None:
        self.client.flush()
        super().write(scenario, **kwargs)


def langfuse_client(service: str) -> tuple[Any, Any, InMemorySpanExporter]:
    """A Langfuse client exporting into memory through its own span processor."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = InMemorySpanExporter()
    client = Langfuse(
        public_key="pk-lf-offline",
        secret_key="sk-lf-offline",
        base_url=CLOSED,
        tracer_provider=provider,
        span_exporter=exporter,
    )
    return client, provider, exporter


def main() -> None:
    client, provider, exporter = langfuse_client("langfuse-langgraph-swarm-recording")
    _HANDLER.set(CallbackHandler())
    recorder = LangfuseRecorder(
        "langfuse_langgraph_swarm", "langgraph-swarm", instrumented_by("langfuse"), exporter
    )
    recorder.client = client
    for scenario in recorder.chosen(
        [
            scenarios.handoff_chain,
            scenarios.handoff_then_tool_agent,
            scenarios.tool_raises,
            scenarios.loop,
            loop_limit,
        ]
    ):
        scenario(recorder)
    client.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
