"""The SDK's scopes: the ``Scope`` base (:mod:`.base`) and a run, a step, an invocation (:mod:`.kinds`).

One name to import them from, for the tracer and the integrations alike.
"""

from __future__ import annotations

from tracekit.sdk.scopes.base import Scope
from tracekit.sdk.scopes.kinds import Invocation, Run, Step

__all__ = ["Invocation", "Run", "Scope", "Step"]
