"""Record Agno teams through OpenLLMetry's opentelemetry-instrumentation-agno, offline.

Run in its own environment (``make record-frameworks`` does):
``.frameworks/openllmetry_agno/bin/python tests/frameworks/record_openllmetry_agno.py``.
The scenarios, the scripted models and the truth (read from the team's own run output)
are ``record_agno.py``'s; only the instrumentation differs: Traceloop's Agno
instrumentation (``traceloop.span.kind``). ``record_agno.py`` has no loop scenario.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# With content off a tool that raised (Agno catches it) is an OK span like any other: only
# its output (status='failure') says it failed, and a delegation only in its input names
# the member, so the content is kept.
os.environ["TRACELOOP_TRACE_CONTENT"] = "true"

import record_agno as scenarios  # offline from here on
from _recording import openllmetry_recorder, shared_scenarios
from opentelemetry.instrumentation.agno import AgnoInstrumentor


def main() -> None:
    recorder, provider = openllmetry_recorder(
        "openllmetry_agno", "agno", "opentelemetry-instrumentation-agno", AgnoInstrumentor()
    )
    for scenario in shared_scenarios(recorder, scenarios, scenarios.parallel_delegates):
        scenario(recorder)
    provider.shutdown()


if __name__ == "__main__":
    main()
