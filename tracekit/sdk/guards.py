"""The checks a runtime may ask for before an agent runs, in the seeds' order.

1. the name is a name (letters, digits, ``-``, ``_``), never an address;
2. it is in the caller's allow-list, when the caller has one;
3. it is registered, when the runtime keeps a registry;
4. it is not already running above this call (the recursion guard);
5. it does not run deeper than the depth limit.

Each check returns the refusal as an :class:`~tracekit.errors.AgentError`, or
None; the first refusal wins.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from tracekit.errors import (
    AgentDepthExceededError,
    AgentError,
    AgentInvalidNameError,
    AgentNotAllowedError,
    AgentNotRegisteredError,
    AgentRecursionError,
)

__all__ = ["Guards", "check_call"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Guards:
    """What an :class:`~tracekit.sdk.AgentTracer` enforces on every invocation.

    Args:
        recursion: refuse an agent already in the running chain
            (``AGENT_RECURSION``, re-raised unchanged through every level).
        max_depth: refuse an invocation deeper than this (``AGENT_DEPTH_EXCEEDED``);
            the root run is depth 0, its direct children depth 1.
        registry: the registered agent names; others are ``AGENT_NOT_REGISTERED``.
        check_names: refuse names that are not letters, digits, ``-`` and ``_``.
        wrap_failures: re-raise a child's exception as ``AGENT_FAILED`` at each
            level, the original kept as ``__cause__``.

    Example:
        >>> Guards(max_depth=3, registry={"sql", "documents"}).max_depth
        3
    """

    recursion: bool = True
    max_depth: int | None = None
    registry: Collection[str] | None = None
    check_names: bool = True
    wrap_failures: bool = True

    def __post_init__(self) -> None:
        if self.registry is not None:
            object.__setattr__(self, "registry", frozenset(self.registry))


def check_call(
    guards: Guards | None,
    agent: str,
    chain: tuple[str, ...],
    depth: int,
    allowed: Iterable[str] | None,
) -> AgentError | None:
    """Return why calling ``agent`` is refused, or None when it may run.

    ``chain`` is the agents running above this call, outermost first;
    ``depth`` the depth the new invocation would run at.

    Example:
        >>> check_call(Guards(), "orders", ("orders", "billing"), 2, None).chain
        ['orders', 'billing', 'orders']
    """
    if allowed is not None:
        allowed = allowed if isinstance(allowed, (set, frozenset)) else frozenset(allowed)
    if guards is None:
        return _not_allowed(agent, chain, allowed) if allowed is not None else None
    if guards.check_names and _NAME.fullmatch(agent) is None:
        return AgentInvalidNameError(
            f"{agent!r} is not an agent name (letters, digits, - and _ only)"
        )
    if allowed is not None and (refusal := _not_allowed(agent, chain, allowed)):
        return refusal
    if guards.registry is not None and agent not in guards.registry:
        return AgentNotRegisteredError(f"no agent named {agent!r} is registered")
    if guards.recursion and agent in chain:
        circle = [*chain[chain.index(agent) :], agent]
        return AgentRecursionError(" -> ".join(circle), chain=circle)
    if guards.max_depth is not None and depth > guards.max_depth:
        return AgentDepthExceededError(
            f"{agent!r} would run at depth {depth}, over the limit of {guards.max_depth}"
        )
    return None


def _not_allowed(agent: str, chain: tuple[str, ...], allowed: Collection[str]) -> AgentError | None:
    if agent in allowed:
        return None
    caller = chain[-1] if chain else "the caller"
    names = ", ".join(sorted(allowed)) or "none"
    return AgentNotAllowedError(f"{caller} may not call {agent!r} (allowed: {names})")
