"""The span attributes tracekit writes, and reads back in its span processor.

``gen_ai.*`` are the OpenTelemetry GenAI semantic conventions, so an existing
OTel pipeline sees agent invocations as such; ``tracekit.*`` carry what the v1
records need. A root run's span has ``tracekit.root`` and no invocation id.

A call from one agent to another is also an ``execute_tool`` span of the
caller with ``gen_ai.transfer.*`` (``pass_control`` for a handoff,
``return_to_caller`` otherwise), the callee's ``invoke_agent`` span under it,
as the GenAI conventions draw an agent-to-agent transfer.
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
CONVERSATION_ID: Final = "gen_ai.conversation.id"
EXECUTE_TOOL: Final = "execute_tool"
TOOL_NAME: Final = "gen_ai.tool.name"
TRANSFER_MODE: Final = "gen_ai.transfer.mode"
TRANSFER_TARGET_NAME: Final = "gen_ai.transfer.target.name"
TRANSFER_TARGET_TYPE: Final = "gen_ai.transfer.target.type"
PASS_CONTROL: Final = "pass_control"
RETURN_TO_CALLER: Final = "return_to_caller"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
REQUEST_MODEL: Final = "gen_ai.request.model"
MODELS: Final = "tracekit.models"
CALL: Final = "tracekit.call"
