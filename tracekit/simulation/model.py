"""The invocation tree one simulated run becomes, before it is written.

Times are whole milliseconds, so that the same moment written as v1
milliseconds and as OTLP nanoseconds reads back as the same float. ``end`` is
``None`` for what never ended (a crash). An invocation's id is its span id:
the v1 records use it as both ``invocationId`` and ``runId``, which is what
the OTLP reader derives from a span, so both outputs give the same records.
They are msgspec structs rather than dataclasses: a fleet makes millions of
them, and a struct is built several times faster.
"""

from __future__ import annotations

import msgspec

from tracekit.events import ErrorInfo

__all__ = ["Inv", "Step"]


class Step(msgspec.Struct):
    """A step (``node`` record) of a run."""

    name: str
    start: int
    end: int | None
    ok: bool = True


class Inv(msgspec.Struct):
    """An agent invocation, or the root run when ``parent`` is None.

    ``items`` are the run's steps and the invocations it made, in the order
    they started. ``tool_end`` is when the caller's delegating tool span ends
    (a background spawn returns long before its child does).
    """

    id: str
    agent: str
    start: int
    depth: int = 0
    node: str | None = None
    kind: str = "delegate"
    parent: Inv | None = None
    end: int | None = None
    status: str = "ok"
    error: ErrorInfo | None = None
    items: list[Step | Inv] = msgspec.field(default_factory=list)
    tool_end: int | None = None

    @property
    def failed(self) -> bool:
        """Whether it ended as an error or a refusal (a cancellation is neither)."""
        return self.status in ("error", "refused")

    def walk(self) -> list[Inv]:
        """This invocation and every one below it, parents first."""
        out: list[Inv] = []
        stack = [self]
        while stack:
            inv = stack.pop()
            out.append(inv)
            for item in reversed(inv.items):
                if type(item) is Inv:
                    stack.append(item)
        return out
