"""Record LangGraph through OpenLLMetry's opentelemetry-instrumentation-langchain, offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/openllmetry_langgraph/bin/python
tests/frameworks/record_openllmetry_langgraph.py``. The scenarios, the scripted
models and the truth (read from the framework's own messages and the tools' log) are
``record_langgraph.py``'s; only the instrumentation differs: Traceloop's
callback handler (``traceloop.span.kind``), whose spans carry a handoff as an ERROR
``ParentCommand`` and as ``goto`` spans and association properties.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# The graph's state (every message, on every span) is most of the bytes; the graph's
# shape is all in the names, the metadata and the association properties without it.
os.environ["TRACELOOP_TRACE_CONTENT"] = "false"

import record_langgraph as scenarios  # offline from here on
from _recording import openllmetry_recorder, shared_scenarios
from opentelemetry.instrumentation.langchain import LangchainInstrumentor


def main() -> None:
    recorder, provider = openllmetry_recorder(
        "openllmetry_langgraph",
        "langgraph",
        "opentelemetry-instrumentation-langchain",
        LangchainInstrumentor(),
    )
    for scenario in shared_scenarios(recorder, scenarios, scenarios.parallel_delegates):
        scenarios.SEEN.clear()
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
