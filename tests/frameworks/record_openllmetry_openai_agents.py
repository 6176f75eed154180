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

sys.path.insert(0, str(Path(__file__).parent))

# Prompts and answers are most of the bytes; the shape is in the names and the attributes.
os.environ["TRACELOOP_TRACE_CONTENT"] = "false"

import _openai_agents_loops as loops
import record_openai_agents as scenarios  # offline from here on
from _recording import openllmetry_recorder, shared_scenarios
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor


async def main() -> None:
    recorder, provider = openllmetry_recorder(
        "openllmetry_openai_agents", "openai-agents",
        "opentelemetry-instrumentation-openai-agents",
        OpenAIAgentsInstrumentor(replace_existing_processors=True),
        handoff_node=lambda caller, target: f"{caller} → unknown.handoff",
    )  # fmt: skip
    for scenario in shared_scenarios(
        recorder, scenarios, scenarios.parallel_delegates, loops.loop, loops.loop_limit
    ):
        await scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
