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
from _langfuse_capture import LangfuseRecorder, langfuse_client, trace_every_langchain_run
from _loop_limit import loop_limit
from _recording import ended_loop, instrumented_by


def main() -> None:
    client, provider, exporter = langfuse_client("langfuse-langgraph-swarm-recording")
    trace_every_langchain_run()
    recorder = LangfuseRecorder(
        "langfuse_langgraph_swarm", "langgraph-swarm", instrumented_by("langfuse"), exporter
    )
    recorder.client = client
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
    client.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
