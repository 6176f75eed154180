"""Record langgraph-swarm through MLflow tracing (``mlflow.langchain.autolog``), offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/mlflow_langgraph_swarm/bin/python
tests/frameworks/record_mlflow_langgraph_swarm.py``. The scenarios, the scripted
models and the truth (read from the swarm's own checkpointed messages) are
``record_langgraph_swarm.py``'s, with ``_loop_limit.py``'s loop that LangGraph stops;
only the instrumentation differs: MLflow's LangChain autolog, whose spans carry
``mlflow.spanType`` (AGENT, CHAIN, TOOL, CHAT_MODEL, ...), exported as OTLP
(``_mlflow_capture.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import record_langgraph_swarm as scenarios  # offline from here on
from _loop_limit import loop_limit
from _mlflow_capture import MlflowRecorder, mlflow_exporter
from _recording import ended_loop, instrumented_by


def main() -> None:
    exporter = mlflow_exporter("mlflow-langgraph-swarm-recording")
    import mlflow

    mlflow.langchain.autolog()
    recorder = MlflowRecorder(
        "mlflow_langgraph_swarm", "langgraph-swarm", instrumented_by("mlflow-tracing"), exporter
    )
    recorder.loops = ended_loop("loop")  # the loop those scenarios write is not marked
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


if __name__ == "__main__":
    main()
