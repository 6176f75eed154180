"""The span attributes tracekit writes, and reads back in its span processor.

``gen_ai.*`` are the OpenTelemetry GenAI semantic conventions, so an existing
OTel pipeline sees agent invocations as such; ``tracekit.*`` carry what the v1
records need. A root run's span has ``tracekit.root`` and no invocation id.
"""

from __future__ import annotations

from typing import Final

OPERATION: Final = "gen_ai.operation.name"
INVOKE_AGENT: Final = "invoke_agent"
AGENT_NAME: Final = "gen_ai.agent.name"
RUN_ID: Final = "tracekit.run_id"
PARENT_RUN_ID: Final = "tracekit.parent_run_id"
INVOCATION_ID: Final = "tracekit.invocation_id"
NODE: Final = "tracekit.node"
KIND: Final = "tracekit.kind"
ROOT: Final = "tracekit.root"
STEP: Final = "tracekit.step"
STATUS: Final = "tracekit.status"
ERROR: Final = "tracekit.error"
FAILURE: Final = "tracekit.failure"
DELEGATED: Final = "tracekit.delegated"
ERROR_TYPE: Final = "error.type"
