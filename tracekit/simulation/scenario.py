"""What one simulated run is meant to become, drawn before it is grown.

A scenario is a forced path from the entry agent down the allow-lists, and
what happens at its end: an ordinary failure of the last agent, or a call it
makes that is refused (recursion, depth, allow-list, registry, input). A
``handled_at`` index makes the agent at that depth catch the failure, so the
run ends ok but degraded. Paths and circles are read off the service's
allow-lists once, so every scenario is one the registry really allows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tracekit.simulation.catalog import FAILURE_CODES, GHOST_AGENTS, Service

__all__ = ["REFUSAL_CODES", "Scenario", "Terminal", "draw_failure", "paths_of", "recursions_of"]

REFUSAL_CODES = (
    "AGENT_DEPTH_EXCEEDED",
    "AGENT_NOT_ALLOWED",
    "AGENT_NOT_REGISTERED",
    "AGENT_INPUT_INVALID",
    "AGENT_INVALID_NAME",
)


@dataclass(frozen=True, slots=True)
class Terminal:
    """The end of a forced path: the last agent fails, or its call is refused."""

    code: str
    message: str
    refused: str | None = None  # the name the last agent asked for, when refused
    chain: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A forced path (agents from the entry) and its end; empty path: no failure."""

    path: tuple[str, ...] = ()
    terminal: Terminal | None = None
    handled_at: int | None = None


_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {}
_RECURSIONS: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {}


def paths_of(service: Service) -> tuple[tuple[str, ...], ...]:
    """Every simple path of agents from the entry, at most ``max_depth`` calls long."""
    if service.name not in _PATHS:
        _PATHS[service.name] = _paths(service)
    return _PATHS[service.name]


def _paths(service: Service) -> tuple[tuple[str, ...], ...]:
    out: list[tuple[str, ...]] = []
    stack: list[tuple[str, ...]] = [(service.entry,)]
    while stack:
        path = stack.pop()
        out.append(path)
        if len(path) > service.max_depth:
            continue
        for callee in service.agents[path[-1]].calls:
            if callee not in path:
                stack.append((*path, callee))
    return tuple(sorted(out))


def recursions_of(service: Service) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Each (path, callee) where the callee closes a circle of two or three agents."""
    if service.name not in _RECURSIONS:
        _RECURSIONS[service.name] = _recursions(service)
    return _RECURSIONS[service.name]


def _recursions(service: Service) -> tuple[tuple[tuple[str, ...], str], ...]:
    out = []
    for path in paths_of(service):
        if len(path) > service.max_depth:
            continue
        for callee in service.agents[path[-1]].calls:
            if callee in path and len(path) - path.index(callee) in (2, 3):
                out.append((path, callee))
    return tuple(out)


def draw_failure(rng: random.Random, service: Service) -> Scenario:
    """An ordinary failure at a varied depth, the origin weighted by flakiness."""
    paths = [p for p in paths_of(service) if 1 < len(p) <= service.max_depth + 1]
    weights = [service.agents[p[-1]].flakiness / len(p) for p in paths]
    path = rng.choices(paths, weights)[0]
    code, message = rng.choice(FAILURE_CODES)
    return Scenario(path, Terminal(code, message))


def draw_recursion(rng: random.Random, service: Service) -> Scenario:
    """A call that closes a circle: refused ``AGENT_RECURSION`` with the circle as chain."""
    path, callee = rng.choice(recursions_of(service))
    chain = (*path[path.index(callee) :], callee)
    message = "agent already running above this call: " + " -> ".join(chain)
    return Scenario(path, Terminal("AGENT_RECURSION", message, callee, chain))


def draw_refusal(rng: random.Random, service: Service) -> Scenario:
    """A refused call: depth, allow-list, registry, input contract or a bad name."""
    code = rng.choice(REFUSAL_CODES)
    if code == "AGENT_DEPTH_EXCEEDED":
        deep = [p for p in paths_of(service) if len(p) == service.max_depth + 1]
        deep = [p for p in deep if any(c not in p for c in service.agents[p[-1]].calls)]
        if deep:
            path = rng.choice(deep)
            callee = rng.choice([c for c in service.agents[path[-1]].calls if c not in path])
            message = f"call depth {len(path)} is over the limit of {service.max_depth}"
            return Scenario(path, Terminal(code, message, callee))
        code = "AGENT_NOT_ALLOWED"
    path = rng.choice([p for p in paths_of(service) if len(p) <= 3])
    spec = service.agents[path[-1]]
    if code == "AGENT_NOT_ALLOWED":
        others = sorted(set(service.agents) - set(spec.calls) - set(path))
        callee = rng.choice(others) if others else rng.choice(GHOST_AGENTS)
        message = f"{callee} is not on the allow-list of {spec.name}"
    elif code == "AGENT_NOT_REGISTERED":
        callee = rng.choice(GHOST_AGENTS)
        message = f"no agent called {callee} is registered"
    elif code == "AGENT_INVALID_NAME":
        callee = "../" + rng.choice(spec.calls or GHOST_AGENTS)
        message = "an agent name is letters, digits, - and _ only"
    else:
        callee = rng.choice(spec.calls or (spec.name,))
        message = f"input for {callee} lacks the declared input 'question'"
    return Scenario(path, Terminal(code, message, callee))


def draw_handled(rng: random.Random, service: Service) -> Scenario:
    """A failure (sometimes a refusal) caught by an agent above it: a degraded run."""
    inner = draw_failure(rng, service) if rng.random() < 0.75 else draw_refusal(rng, service)
    failing_depth = (
        len(inner.path) - 1 if inner.terminal and not inner.terminal.refused else len(inner.path)
    )
    return Scenario(inner.path, inner.terminal, rng.randrange(0, max(1, failing_depth)))
