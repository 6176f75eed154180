"""What a few spans' input says that no attribute does: the agent whose turn it is.

A workflow may open no agent span at all (see docs/otlp.md): the
agent only appears as ``current_agent_name='triage'`` in the repr of the
event a ``<Workflow>.setup_agent`` step span takes as input. The decoders
read the input of those spans only (a name test first: it is cheap) and keep
the agent as the :data:`CURRENT_AGENT` attribute; every other span's input
is not read.

Example:
    >>> current_agent("AgentWorkflow.setup_agent", '{"ev": "AgentInput(current_agent_name=\\'billing\\')"}')
    'billing'
    >>> current_agent("AgentWorkflow.call_tool", "current_agent_name='billing'") is None
    True
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["CURRENT_AGENT", "INPUT", "current_agent", "is_turn"]

#: The attribute the decoders keep the agent in (the framework's own word for it).
CURRENT_AGENT: Final = "current_agent_name"
#: The attribute holding a span's input.
INPUT: Final = "input.value"
_TURN: Final = ".setup_agent"
_NAMED: Final = re.compile(r"""current_agent_name=\\?(['"])(.+?)\\?\1""")


def is_turn(name: str) -> bool:
    """Whether a span starts an agent's turn (``<Workflow>.setup_agent``)."""
    return name.endswith(_TURN)


def current_agent(name: str, text: Any) -> str | None:
    """The agent a turn span's input names, or None (not a turn span, or none named)."""
    if not isinstance(text, str) or not is_turn(name):
        return None
    found = _NAMED.search(text)
    return found.group(2) if found else None
