"""tracekit: see who called whom in multi-agent systems, and what failed where.

The public API is what ``__all__`` lists; everything else is private and may
change. ``tests/test_exported_members.py`` keeps this list honest.
"""

from __future__ import annotations

from tracekit.errors import (
    AgentError,
    AgentFailedError,
    AgentRecursionError,
    StoreError,
    StoreLockedError,
    TraceFileError,
    TracekitError,
    TraceReadError,
)
from tracekit.events import (
    Enter,
    ErrorInfo,
    Event,
    Exit,
    Node,
    RunEnd,
    RunStart,
    decode_event,
    encode_event,
)

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "AgentFailedError",
    "AgentRecursionError",
    "Enter",
    "ErrorInfo",
    "Event",
    "Exit",
    "Node",
    "RunEnd",
    "RunStart",
    "StoreError",
    "StoreLockedError",
    "TraceFileError",
    "TraceReadError",
    "TracekitError",
    "__version__",
    "decode_event",
    "encode_event",
]
