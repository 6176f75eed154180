"""The ``execute_tool`` span of a call from one agent to another (GenAI conventions).

The OpenTelemetry GenAI conventions draw an agent-to-agent call as a tool
execution of the caller, ``execute_tool {tool}``, carrying the caller's
``gen_ai.agent.name`` and ``gen_ai.transfer.mode``/``target.name``: a handoff
passes control (``pass_control``), a delegation or a subagent reports back
(``return_to_caller``). The callee's ``invoke_agent`` span is its child, so a
backend that knows the conventions sees the edge a handoff makes even where it
reads no ``tracekit.*`` attribute.

The tool is the invocation's node, so only a call that names its node gets
the span. It is marked ``tracekit.delegated`` (like a step that delegated):
it is the edge, not a step, and tracekit's own OTLP reader shows no ``node``
for it.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import StatusCode

from tracekit.events import ErrorInfo, Kind, Status
from tracekit.sdk import attributes as A
from tracekit.sdk.context import Frame

__all__ = ["end_transfer", "transfer_span"]


def transfer_span(caller: Frame, agent: str, kind: Kind, node: str) -> tuple[str, dict[str, Any]]:
    """The name and attributes of the caller's ``execute_tool`` span for a call of ``agent``.

    Example:
        >>> caller = Frame("r", ("triage",), 0, "")
        >>> name, attrs = transfer_span(caller, "billing", "handoff", "transfer_to_billing")
        >>> name, attrs["gen_ai.agent.name"], attrs["gen_ai.transfer.mode"]
        ('execute_tool transfer_to_billing', 'triage', 'pass_control')
        >>> transfer_span(Frame("r", ("desk",), 0, ""), "sql", "delegate", "ask")[1]["gen_ai.transfer.mode"]
        'return_to_caller'
    """
    attrs: dict[str, Any] = {
        A.OPERATION: A.EXECUTE_TOOL,
        A.TOOL_NAME: node,
        A.TRANSFER_MODE: A.PASS_CONTROL if kind == "handoff" else A.RETURN_TO_CALLER,
        A.TRANSFER_TARGET_NAME: agent,
        A.TRANSFER_TARGET_TYPE: "agent",
        A.DELEGATED: True,
    }
    if caller.chain:
        attrs[A.AGENT_NAME] = caller.chain[-1]
    if caller.session is not None:
        attrs[A.CONVERSATION_ID] = caller.session
    return f"execute_tool {node}", attrs


def end_transfer(span: Any, status: Status, error: ErrorInfo | None) -> None:
    """End the span as the call ended: an error or a refusal is the tool's failure too."""
    if status in ("error", "refused"):
        code = error.code if error is not None else status
        span.set_attribute(A.ERROR_TYPE, code)
        span.set_status(StatusCode.ERROR, code)
    span.end()
