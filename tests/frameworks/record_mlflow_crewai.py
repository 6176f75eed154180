"""Record CrewAI through MLflow tracing (``mlflow.crewai.autolog``), offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/mlflow_crewai/bin/python tests/frameworks/record_mlflow_crewai.py``.
The scenarios, the scripted LLMs and the truth (read from CrewAI's event bus) are
``record_crewai.py``'s; only the instrumentation differs: MLflow's CrewAI autolog,
whose spans carry ``mlflow.spanType`` (AGENT, TOOL, CHAIN, ...), exported as OTLP
(``_mlflow_capture.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import record_crewai as scenarios  # offline from here on
from _mlflow_capture import MlflowRecorder, mlflow_exporter
from _recording import instrumented_by


def main() -> None:
    exporter = mlflow_exporter("mlflow-crewai-recording")
    import mlflow

    mlflow.crewai.autolog()
    recorder = MlflowRecorder("mlflow_crewai", "crewai", instrumented_by("mlflow-tracing"), exporter)
    for scenario in recorder.chosen(
        [
            scenarios.handoff_chain,
            scenarios.handoff_then_tool_agent,
            scenarios.tool_raises,
            scenarios.ask_then_delegate,
        ]
    ):
        scenario(recorder)


if __name__ == "__main__":
    main()
