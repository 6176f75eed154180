"""Record the OpenAI Agents SDK through OpenLLMetry's opentelemetry-instrumentation-openai-agents.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/openllmetry_openai_agents/bin/python
tests/frameworks/record_openllmetry_openai_agents.py``. The scenarios, the scripted
models and the truth are ``record_openai_agents.py``'s, with ``_openai_agents_loops.py``'s
two loops; only the instrumentation differs: Traceloop's tracing processor, which
replaces the SDK's own (so nothing is sent to OpenAI's trace backend). A handoff is its
``<from> → unknown.handoff`` span (the SDK names the target only after the span began,
and the instrumentation reads it at the start): that span is the node of the truth.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

# Prompts and answers are most of the bytes; the shape is in the names and the attributes.
os.environ["TRACELOOP_TRACE_CONTENT"] = "false"

import _openai_agents_loops as loops  # noqa: E402
import record_openai_agents as scenarios  # noqa: E402  (offline from here on)
from _recording import Recorder, instrumented_by, memory_provider  # noqa: E402
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402


class HandoffSpanRecorder(Recorder):
    """Names each handoff's node as this instrumentation's handoff span does."""

    def write(self, scenario: str, **kwargs: Any) -> None:
        rows = kwargs["truth"].invocations
        for row in rows:
            if row["kind"] == "handoff":
                row["node"] = f"{rows[row['parent']]['agent']} → unknown.handoff"
        super().write(scenario, **kwargs)


async def main() -> None:
    provider, exporter = memory_provider("openllmetry-openai-agents-recording")
    OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)
    recorder = HandoffSpanRecorder(
        "openllmetry_openai_agents", "openai-agents",
        instrumented_by("opentelemetry-instrumentation-openai-agents"), exporter,
    )  # fmt: skip
    for scenario in recorder.chosen(
        [
            scenarios.handoff_chain,
            scenarios.handoff_then_tool_agent,
            scenarios.tool_raises,
            scenarios.parallel_delegates,
            loops.loop,
            loops.loop_limit,
        ]
    ):
        await scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
