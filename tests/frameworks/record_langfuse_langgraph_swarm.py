"""Record langgraph-swarm through the Langfuse SDK's LangChain callback handler, offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/langfuse_langgraph_swarm/bin/python
tests/frameworks/record_langfuse_langgraph_swarm.py``. The scenarios, the scripted
models and the truth (read from the swarm's own checkpointed messages) are
``record_langgraph_swarm.py``'s, with ``_loop_limit.py``'s loop that LangGraph stops;
only the instrumentation differs: ``langfuse.langchain.CallbackHandler`` on every run,
whose spans are the Langfuse SDK's own (``langfuse.observation.type``: agent, tool,
chain, generation, span), captured as ``_langfuse_capture.py`` says.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import record_langgraph_swarm as scenarios  # offline from here on
from _langfuse_capture import langfuse_recorder
from _loop_limit import loop_limit
from _recording import ended_loop, shared_scenarios


def main() -> None:
    recorder, close = langfuse_recorder("langfuse_langgraph_swarm", "langgraph-swarm")
    recorder.loops = ended_loop("loop")  # the loop those scenarios write is not marked
    for scenario in shared_scenarios(recorder, scenarios, scenarios.loop, loop_limit):
        scenario(recorder)
    close()


if __name__ == "__main__":
    main()
