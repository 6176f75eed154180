"""Where the dialects write their verdict on a span: the attributes the rules read.

Example:
    >>> KIND, CONTROL_FLOW_KEY
    ('tracekit.dialect.kind', 'tracekit.control_flow')
"""

from __future__ import annotations

from typing import Final

__all__ = ["CONTROL_FLOW_KEY", "KIND", "Key"]

#: A span's key: its trace id and span id.
Key = tuple[str, str]
#: Where a dialect's verdict on a span is written; the kind tests read it first.
KIND: Final = "tracekit.dialect.kind"
#: The control-flow exception a span raised (it did not fail).
CONTROL_FLOW_KEY: Final = "tracekit.control_flow"
