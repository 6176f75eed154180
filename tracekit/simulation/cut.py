"""Stop a grown invocation tree at a moment: cancelled, or crashed.

Cancelling at ``t`` ends every invocation still running then with status
``cancelled`` (code ``CANCELLED``), as a cancel token that reaches the whole
tree does. A crash at ``t`` leaves them without an end at all: their enters
are in the trace, their exits and the run's end never are. Either way what
had not begun by ``t`` never happens, and a step that had not ended is lost
(a step is written when it ends).
"""

from __future__ import annotations

from tracekit.events import ErrorInfo
from tracekit.simulation.model import Inv, Step

__all__ = ["CANCELLED", "cut"]

CANCELLED = "CANCELLED"


def cut(root: Inv, t: int, *, cancel: bool) -> None:
    """Cancel (``cancel=True``) or crash ``root`` and everything under it at ``t``."""
    for inv in root.walk():
        if inv.end is not None and inv.end <= t:
            continue
        inv.items = [item for item in inv.items if _kept(item, t)]
        if cancel:
            message = "cancelled by the user" if inv.parent is None else "cancelled"
            inv.end, inv.status = t, "cancelled"
            inv.error = ErrorInfo(code=CANCELLED, message=message)
            inv.tool_end = t if inv.tool_end is None or inv.tool_end > t else inv.tool_end
        else:
            inv.end, inv.error = None, None
            inv.tool_end = inv.tool_end if inv.tool_end is not None and inv.tool_end <= t else None


def _kept(item: Step | Inv, t: int) -> bool:
    if isinstance(item, Step):
        return item.end is not None and item.end <= t
    return item.start <= t
