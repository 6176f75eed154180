"""Write a grown run as tracekit v1 records, in the order the OTLP reader gives."""

from __future__ import annotations

from operator import attrgetter

from tracekit.events import Enter, ErrorInfo, Event, Exit, Node, RunEnd, RunStart
from tracekit.intake.otlp.convert import event_sort_key, failure_of
from tracekit.simulation.catalog import TOOL_STEPS
from tracekit.simulation.model import Inv, Step
from tracekit.simulation.usage import usage_of

__all__ = ["v1_events"]

_BY_TS = attrgetter("ts")
#: A failed tool step's error, as the OTLP form's status message reads back.
_STEP_FAILED = ErrorInfo(code="step failed", message="step failed")


def v1_events(
    root: Inv,
    service: str,
    trace_id: str,
    invs: list[Inv] | None = None,
    session: str | None = None,
) -> list[Event]:
    """The records of one run: run.start, steps, enters and exits, run.end.

    ``invs`` is ``root.walk()`` when the caller has it already; ``session``
    goes on the run.start. Each exit of an invocation that ran carries its
    own usage (:func:`tracekit.simulation.usage.usage_of`).
    """
    events: list[Event] = [
        RunStart(
            ts=float(root.start),
            service=service,
            traceId=trace_id,
            runId=root.id,
            agent=root.agent,
            session=session,
        )
    ]
    for inv in invs if invs is not None else root.walk():
        for item in inv.items:
            if isinstance(item, Step):
                assert item.end is not None
                tool = item.name in TOOL_STEPS  # an execute_tool span in the OTLP form
                events.append(
                    Node(
                        ts=float(item.start),
                        service=service,
                        traceId=trace_id,
                        runId=inv.id,
                        id=item.name,
                        ok=item.ok,
                        durationMs=float(item.end - item.start),
                        call="tool" if tool else None,
                        error=_STEP_FAILED if tool and not item.ok else None,
                    )
                )
            else:
                events.extend(_invocation(item, inv.id, service, trace_id))
    if root.end is not None:
        events.append(
            RunEnd(
                ts=float(root.end),
                service=service,
                traceId=trace_id,
                runId=root.id,
                ok=root.status == "ok",
                durationMs=float(root.end - root.start),
                failure=failure_of(root.error),
                error=root.error,
            )
        )
    times = [e.ts for e in events]
    # Without two records at one moment, time alone gives event_sort_key's order, cheaper.
    events.sort(key=_BY_TS if len(set(times)) == len(times) else event_sort_key)
    return events


def _invocation(inv: Inv, parent_run: str, service: str, trace_id: str) -> list[Event]:
    enter = Enter(
        ts=float(inv.start),
        service=service,
        traceId=trace_id,
        invocationId=inv.id,
        runId=inv.id,
        parentRunId=parent_run,
        agent=inv.agent,
        node=inv.node,
        kind=inv.kind,  # type: ignore[arg-type]
    )
    if inv.end is None:
        return [enter]
    exit_ = Exit(
        ts=float(inv.end),
        service=service,
        traceId=trace_id,
        invocationId=inv.id,
        runId=inv.id,
        parentRunId=parent_run,
        agent=inv.agent,
        node=inv.node,
        ok=inv.status == "ok",
        durationMs=float(inv.end - inv.start),
        status=inv.status,  # type: ignore[arg-type]
        error=inv.error,
        usage=usage_of(inv.id, inv.agent, ended=inv.status != "refused"),
    )
    return [enter, exit_]
