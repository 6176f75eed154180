"""Record the OpenAI Agents SDK through MLflow tracing (``mlflow.openai.autolog``), offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/mlflow_openai_agents/bin/python tests/frameworks/record_mlflow_openai_agents.py``.
The scenarios, the scripted models and the truth are ``record_openai_agents.py``'s, with
``_openai_agents_loops.py``'s two loops; only the instrumentation differs: MLflow's OpenAI
autolog, which adds its tracing processor to the SDK's (the SDK's own exporter to OpenAI
is removed first), its spans carrying ``mlflow.spanType`` (AGENT, TOOL, CHAT_MODEL, ...),
exported as OTLP (``_mlflow_capture.py``). A handoff is a ``Handoff`` CHAIN span whose
input names the caller and output the target: that span is the node of the truth.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _openai_agents_loops as loops
import record_openai_agents as scenarios  # offline from here on
from _mlflow_capture import mlflow_recorder
from _recording import shared_scenarios
from agents import set_trace_processors


async def main() -> None:
    recorder = mlflow_recorder(
        "mlflow_openai_agents", "openai-agents", handoff_node=lambda caller, target: "Handoff"
    )
    import mlflow

    set_trace_processors([])
    mlflow.openai.autolog()
    for scenario in shared_scenarios(
        recorder, scenarios, scenarios.parallel_delegates, loops.loop, loops.loop_limit
    ):
        await scenario(recorder)


if __name__ == "__main__":
    asyncio.run(main())
