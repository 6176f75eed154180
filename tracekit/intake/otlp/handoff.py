"""The handoff vocabulary: which names mean control passed on, and to whom.

One list of words for the whole OTLP reader: the decoders mark a span whose
name reads as a transfer (:func:`is_transfer_name`) and find the agent its
arguments name (:func:`target_in`); the span index reads a target from a
name (:func:`target_of_name`); the edge rules and the mapping tell a handoff
from a delegation by a node's name (:func:`kind_of_name`). A framework whose
handoff tool has another name adds its words here, nowhere else.

Example:
    >>> is_transfer_name("execute_tool transfer_to_agent"), is_transfer_name("lookup")
    (True, False)
    >>> target_of_name("transfer_to_billing"), kind_of_name("transfer_to_billing")
    ('billing', 'handoff')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

from tracekit.events import Kind
from tracekit.intake.otlp.names import NameMemo

__all__ = [
    "ARGUMENT_KEYS",
    "HANDOFF_WORDS",
    "TARGET_KEYS",
    "TRANSFER_NAMES",
    "is_handoff_word",
    "is_transfer_name",
    "kind_of_name",
    "target_in",
    "target_of_name",
]

#: A span or tool name that reads as a handoff, transfer or delegation to another agent
#: (``delegate_task_to_member``, ``Delegate work to coworker``: teams and crews).
_TRANSFER: Final = re.compile("transfer|hand_?off|delegate", re.IGNORECASE)
#: Of those, the words that mean control passes on whether or not an agent is named.
_HANDOFF: Final = re.compile("transfer|hand_?off", re.IGNORECASE)
#: Where a transfer tool's arguments are written (a framework's own key, the GenAI
#: conventions, a span's input); read only to find the agent a transfer names.
ARGUMENT_KEYS: Final = (
    "gcp.vertex.agent.tool_call_args",
    "gen_ai.tool.call.arguments",
    "input.value",
)
#: The argument of a transfer tool that names the agent it hands to (``to_agent``:
#: a workflow's ``handoff``; ``member_id``: a team's; ``coworker``: a crew's).
TARGET_KEYS: Final = ("agent_name", "agent", "target_agent", "to_agent", "member_id", "coworker")
#: Names that carry their target after the prefix (``transfer_to_billing``).
_TARGET_PREFIXES: Final = ("handoff to ", "transfer_to_", "transfer to ")
#: Generic transfer tools: the target is in their arguments, not their name.
_GENERIC: Final = ("transfer_to_agent", "handoff_to_agent")
_HANDOFF_PREFIXES: Final = ("transfer_to_", "handoff", "hand_off")
_SPAWN_PREFIX: Final = "spawn"


def is_transfer_name(name: str) -> bool:
    """Whether a span or tool name reads as a handoff (``transfer_to_agent``, ``handoff to x``)."""
    return _TRANSFER.search(name) is not None


def is_handoff_word(name: str) -> bool:
    """Whether a name reads as a handoff by itself (``transfer``, ``handoff``).

    A delegation word (``delegate``) is evidence of an edge only with a target
    named in its arguments: a plain ``delegate`` tool is an ordinary nesting.

    Example:
        >>> is_handoff_word("transfer_to_agent"), is_handoff_word("delegate_task_to_member")
        (True, False)
    """
    return _HANDOFF.search(name) is not None


#: :func:`is_transfer_name` per name, remembered: span and tool names repeat.
TRANSFER_NAMES: Final = NameMemo(is_transfer_name)
#: :func:`is_handoff_word` per name, remembered.
HANDOFF_WORDS: Final = NameMemo(is_handoff_word)


def target_in(values: Iterable[Any]) -> str | None:
    """The agent named by a transfer's arguments: an ``agent_name`` (or ``agent``) key.

    ``values`` are attribute values, JSON text or already decoded.

    Example:
        >>> target_in(['{"agent_name": "billing"}'])
        'billing'
    """
    for value in values:
        if isinstance(value, str) and any(key in value for key in TARGET_KEYS):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, dict):
            # Some tool spans hold the call's arguments under ``kwargs``.
            for where in (value, value.get("kwargs")):
                found = _named(where)
                if found is not None:
                    return found
    return None


def _named(arguments: Any) -> str | None:
    if isinstance(arguments, dict):
        for key in TARGET_KEYS:
            found = arguments.get(key)
            if isinstance(found, str) and found:
                return found
    return None


def target_of_name(name: str) -> str | None:
    """The agent a handoff's own name carries (``handoff to x``, ``transfer_to_x``), if any."""
    if name in _GENERIC:
        return None
    for prefix in _TARGET_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :].strip() or None
    return None


def kind_of_name(name: str) -> Kind:
    """The kind a delegating tool's name means: ``handoff``, ``subagent`` or ``delegate``."""
    if name.startswith(_HANDOFF_PREFIXES) or name in _GENERIC:
        return "handoff"
    if name.startswith(_SPAWN_PREFIX):
        return "subagent"
    return "delegate"
