"""The Langfuse SDK's spans, as its span processor would send them, captured in memory.

The Langfuse client is given its own tracer provider and an in-memory span
exporter: its ``LangfuseSpanProcessor`` (a batch processor with Langfuse's export
filter and masking) hands that exporter what it would send to a Langfuse server.
Its base URL is the closed port, so nothing leaves the machine.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from _recording import CLOSED, Recorder, instrumented_by
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class LangfuseRecorder(Recorder):
    """A recorder that flushes the Langfuse client's span processor before it writes."""

    client: Any = None

    def write(self, scenario: str, **kwargs: Any) -> None:
        self.client.flush()
        super().write(scenario, **kwargs)


def langfuse_client(service: str) -> tuple[Any, TracerProvider, InMemorySpanExporter]:
    """A Langfuse client exporting into memory through its own span processor."""
    from langfuse import Langfuse

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


_HANDLER: ContextVar[Any] = ContextVar("langfuse_handler", default=None)


def trace_every_langchain_run() -> None:
    """Langfuse's LangChain ``CallbackHandler`` on every run (a LangChain configure hook),
    as if passed in each ``config["callbacks"]``."""
    from langchain_core.tracers.context import register_configure_hook
    from langfuse.langchain import CallbackHandler

    register_configure_hook(_HANDLER, inheritable=True)
    _HANDLER.set(CallbackHandler())


def langfuse_recorder(name: str, framework: str) -> tuple[LangfuseRecorder, Any]:
    """A recorder of the Langfuse SDK's LangChain callback handler on ``framework``.

    Every LangChain run is traced; the client writes to a provider that keeps
    its spans in memory, named after the recording. The second value shuts the
    client and the provider down, in that order, at the end.
    """
    client, provider, exporter = langfuse_client(f"{name.replace('_', '-')}-recording")
    trace_every_langchain_run()
    recorder = LangfuseRecorder(name, framework, instrumented_by("langfuse"), exporter)
    recorder.client = client

    def close() -> None:
        client.shutdown()
        provider.shutdown()

    return recorder, close
