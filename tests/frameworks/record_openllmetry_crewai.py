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
from _recording import openllmetry_recorder, shared_scenarios
from opentelemetry.instrumentation.crewai import CrewAIInstrumentor


def main() -> None:
    recorder, provider = openllmetry_recorder(
        "openllmetry_crewai", "crewai", "opentelemetry-instrumentation-crewai", CrewAIInstrumentor()
    )
    for scenario in shared_scenarios(recorder, scenarios, scenarios.ask_then_delegate):
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
