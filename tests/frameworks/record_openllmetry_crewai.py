"""Record CrewAI through OpenLLMetry's opentelemetry-instrumentation-crewai, offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/openllmetry_crewai/bin/python tests/frameworks/record_openllmetry_crewai.py``.
The scenarios, the scripted LLMs and the truth (read from CrewAI's event bus) are
``record_crewai.py``'s; only the instrumentation differs: Traceloop's wrappers of
``Crew.kickoff``, ``Agent.execute_task``, ``Task.execute_sync`` and ``LLM.call``
(``traceloop.span.kind``, ``crewai.*`` attributes). CrewAI gives a coworker no coworker
tools of its own, so it has no loop of agents to record.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# Prompts and answers are most of the bytes; the shape is in the names and the attributes.
os.environ["TRACELOOP_TRACE_CONTENT"] = "false"

import record_crewai as scenarios  # offline from here on
from _recording import Recorder, instrumented_by, memory_provider
from opentelemetry.instrumentation.crewai import CrewAIInstrumentor


def main() -> None:
    provider, exporter = memory_provider("openllmetry-crewai-recording")
    CrewAIInstrumentor().instrument(tracer_provider=provider)
    recorder = Recorder(
        "openllmetry_crewai", "crewai", instrumented_by("opentelemetry-instrumentation-crewai"),
        exporter,
    )  # fmt: skip
    for scenario in recorder.chosen(
        [
            scenarios.handoff_chain,
            scenarios.handoff_then_tool_agent,
            scenarios.tool_raises,
            scenarios.ask_then_delegate,
        ]
    ):
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
