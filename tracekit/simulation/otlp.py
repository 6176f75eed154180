"""Write a grown run as OTLP spans (JSON form), as a GenAI-instrumented runtime would.

Every invocation is an ``invoke_agent`` span under the caller's
``execute_tool`` span named for the delegating node; steps are plain spans
(``execute_tool`` ones for tool steps). Only GenAI and OTLP fields are used,
except ``tracekit.error`` on recursion spans: OTLP has no place for the
circle. A span that never ended has no ``endTimeUnixNano``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from tracekit.events import ErrorInfo
from tracekit.simulation.catalog import TOOL_STEPS
from tracekit.simulation.model import Inv, Step
from tracekit.simulation.usage import usage_of

__all__ = ["otlp_spans", "resource_spans"]

_NS = 1_000_000
_ENCODER = msgspec.json.Encoder()


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _times(span: dict[str, Any], start: int, end: int | None) -> dict[str, Any]:
    span["startTimeUnixNano"] = str(start * _NS)
    if end is not None:
        span["endTimeUnixNano"] = str(end * _NS)
    return span


def otlp_spans(
    root: Inv, trace_id: str, new_id: Callable[[], str], session: str | None = None
) -> list[dict[str, Any]]:
    """The spans of one run, children before parents (the order spans end in).

    Agent spans carry the GenAI usage attributes of the v1 exits, and every
    span of the run ``gen_ai.conversation.id`` when it has a session.
    """
    spans: list[dict[str, Any]] = []
    parent_of: dict[str, str] = {}
    for inv in root.walk():
        span = _agent_span(inv, trace_id, parent_of.get(inv.id, ""))
        _genai(span["attributes"], inv, session)
        spans.append(span)
        for item in inv.items:
            if isinstance(item, Step):
                spans.append(_step_span(item, inv.id, trace_id, new_id()))
            else:
                tool = new_id()
                parent_of[item.id] = tool
                spans.append(_tool_span(item, inv.id, trace_id, tool))
    spans.reverse()
    return spans


def _agent_span(inv: Inv, trace_id: str, parent: str) -> dict[str, Any]:
    attrs = [_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", inv.agent)]
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": inv.id,
        "parentSpanId": parent,
        "name": f"invoke_agent {inv.agent}",
        "kind": 1,
    }
    _times(span, inv.start, inv.end)
    span["attributes"] = attrs
    span["status"] = _status(inv.error, attrs)
    return span


def _genai(attrs: list[dict[str, Any]], inv: Inv, session: str | None) -> None:
    if session is not None:
        attrs.append(_kv("gen_ai.conversation.id", session))
    if inv.parent is None or inv.end is None:
        return
    usage = usage_of(inv.id, inv.agent, ended=inv.status != "refused")
    if usage is not None:
        attrs.append(
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(usage.inputTokens)}}
        )
        attrs.append(
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": str(usage.outputTokens)}}
        )
        attrs.append(_kv("gen_ai.response.model", (usage.models or [""])[0]))


def _status(error: ErrorInfo | None, attrs: list[dict[str, Any]]) -> dict[str, Any]:
    if error is None:
        return {}
    attrs.append(_kv("error.type", error.code))
    if error.chain:
        attrs.append(_kv("tracekit.error", _ENCODER.encode(error).decode()))
    return {"code": 2, "message": error.message}


def _tool_span(child: Inv, caller: str, trace_id: str, span_id: str) -> dict[str, Any]:
    node = child.node or ""
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": caller,
        "name": f"execute_tool {node}",
        "kind": 1,
    }
    _times(span, child.start, child.tool_end)
    span["attributes"] = [
        _kv("gen_ai.operation.name", "execute_tool"),
        _kv("gen_ai.tool.name", node),
    ]
    return span


def _step_span(step: Step, run: str, trace_id: str, span_id: str) -> dict[str, Any]:
    tool = step.name in TOOL_STEPS
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": run,
        "name": f"execute_tool {step.name}" if tool else step.name,
        "kind": 1,
    }
    _times(span, step.start, step.end)
    span["attributes"] = (
        [_kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", step.name)]
        if tool
        else []
    )
    span["status"] = {} if step.ok else {"code": 2, "message": "step failed"}
    return span


def resource_spans(
    batch: list[tuple[str, dict[str, Any]]], scope: dict[str, str]
) -> dict[str, Any]:
    """One exported batch as a ``TracesData`` object, spans grouped by service."""
    by_service: dict[str, list[dict[str, Any]]] = {}
    for service, span in batch:
        by_service.setdefault(service, []).append(span)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", service)]},
                "scopeSpans": [{"scope": scope, "spans": spans}],
            }
            for service, spans in by_service.items()
        ]
    }
