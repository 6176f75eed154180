"""An attribute reference of a dialect: a key, or a path into the key's JSON value.

An instrumentation may write what no attribute says inside a JSON
attribute (a span's output naming whose turn it is); a dialect reads it by
path: ``key#path.to.field``.

Example:
    >>> attribute_of({"out": '{"state": {"agent": "billing"}}'}, "out#state.agent")
    'billing'
    >>> key_of("out#state.agent")
    'out'
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["PATH_MARK", "attribute_of", "key_of"]

#: Between an attribute's key and a path into its JSON value (``output#result.agent``).
PATH_MARK: Final = "#"


def attribute_of(attrs: dict[str, Any], ref: str) -> Any:
    """An attribute's value, or, for ``key#a.b``, what lies at ``a.b`` in its JSON value.

    A value that is not JSON, or lacks the path, gives None.

    Example:
        >>> attribute_of({"out": '{"state": {"agent": "billing"}}'}, "out#state.agent")
        'billing'
        >>> attribute_of({"out": "plain text"}, "out#state.agent") is None
        True
    """
    key, mark, path = ref.partition(PATH_MARK)
    value = attrs.get(key)
    if not mark or value is None:
        return value
    parts = path.split(".")
    if isinstance(value, str):
        if f'"{parts[-1]}"' not in value:
            return None  # most values: one substring test, no parse
        try:
            value = json.loads(value)
        except ValueError:
            return None
    for part in parts:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def key_of(ref: str) -> str:
    """The attribute a reference reads (``out`` of ``out#state.agent``).

    Example:
        >>> key_of("out#state.agent"), key_of("gen_ai.agent.name")
        ('out', 'gen_ai.agent.name')
    """
    return ref.partition(PATH_MARK)[0]
