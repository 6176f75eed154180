"""Record LlamaIndex AgentWorkflow through OpenLLMetry's opentelemetry-instrumentation-llamaindex.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/openllmetry_llama_index/bin/python
tests/frameworks/record_openllmetry_llama_index.py``. The scenarios, the scripted LLMs
and the truth are ``record_llama_index.py``'s; only the instrumentation differs:
Traceloop's LlamaIndex instrumentation (``traceloop.span.kind``), offline. It imports
``llama_index.llms`` (a namespace only the llama-index-llms-* packages fill), so the
venv has llama-index-llms-openai, never called.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# With content off its spans name no agent (AgentWorkflow.task, FunctionTool.task): the
# agents are only in the inputs and outputs, so they are kept.
os.environ["TRACELOOP_TRACE_CONTENT"] = "true"

import record_llama_index as scenarios  # offline from here on
from _recording import ended_loop, openllmetry_recorder, shared_scenarios
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor


def main() -> None:
    recorder, provider = openllmetry_recorder(
        "openllmetry_llama_index",
        "llama-index-core",
        "opentelemetry-instrumentation-llamaindex",
        LlamaIndexInstrumentor(),
    )
    recorder.loops = ended_loop("loop")  # the loop those scenarios write is not marked
    for scenario in shared_scenarios(recorder, scenarios, scenarios.loop):
        asyncio.run(scenario(recorder))
    provider.shutdown()


if __name__ == "__main__":
    main()
