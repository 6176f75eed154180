"""tracekit: see who called whom in multi-agent systems, and what failed where.

The public API is what ``__all__`` lists; everything else is private and may
change. ``tests/test_exported_members.py`` keeps this list honest.
"""

from __future__ import annotations

from tracekit.describe import describe_agent_tree, describe_forest
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
from tracekit.readers import ReadResult, read_trace
from tracekit.tree import (
    AgentStep,
    AgentTree,
    Forest,
    Integrity,
    NodeStep,
    RunTree,
    agent_tree,
    agents_in,
    build_forest,
)

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "AgentFailedError",
    "AgentRecursionError",
    "AgentStep",
    "AgentTree",
    "Enter",
    "ErrorInfo",
    "Event",
    "Exit",
    "Forest",
    "Integrity",
    "Node",
    "NodeStep",
    "ReadResult",
    "RunEnd",
    "RunStart",
    "RunTree",
    "StoreError",
    "StoreLockedError",
    "TraceFileError",
    "TraceReadError",
    "TracekitError",
    "__version__",
    "agent_tree",
    "agents_in",
    "build_forest",
    "decode_event",
    "describe_agent_tree",
    "describe_forest",
    "encode_event",
    "read_trace",
]
