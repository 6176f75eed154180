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
from _mlflow_capture import mlflow_recorder
from _recording import ended_loop, shared_scenarios


def main() -> None:
    recorder = mlflow_recorder("mlflow_langgraph_swarm", "langgraph-swarm")
    import mlflow

    mlflow.langchain.autolog()
    recorder.loops = ended_loop("loop")  # the loop those scenarios write is not marked
    for scenario in shared_scenarios(recorder, scenarios, scenarios.loop, loop_limit):
        scenario(recorder)


if __name__ == "__main__":
    main()
