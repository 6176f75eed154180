"""A seeded fleet of plain-OpenTelemetry multi-agent runs, each with the truth its code recorded.

Every scenario is real Python run on :class:`~tracekit.simulation.otel_apps.Apps`:
exceptions are raised, re-raised, wrapped with ``raise ... from``, caught;
parallel branches run in threads (the OpenTelemetry context copied into each);
agents live in several services. :func:`otel_fleet` runs ``n`` of them and
returns the spans (as the SDK exported them) and each run's
:class:`~tracekit.simulation.otel_apps.Truth`, by trace id.

Example:
    >>> spans, truths = otel_fleet(20, seed=1)
    >>> len(truths), sorted({t.outcome for t in truths.values()}) [:2]
    (20, ['degraded', 'failed:child'])
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracekit.simulation.otel_apps import Apps, Truth

__all__ = ["SCENARIOS", "otel_fleet"]

_SERVICES: Final = ("desk", "billing", "refunds", "search")
_AGENTS: Final = ("planner", "critic", "writer", "refunds", "billing", "search", "ledger")


class RefundTimeout(TimeoutError):
    """The refunds API did not answer in time."""


class LedgerError(RuntimeError):
    """The ledger refused a write."""


class AppError(RuntimeError):
    """What an agent raises when a callee failed, with the callee's error as its cause."""


_ERRORS: Final = (RefundTimeout, LedgerError, ValueError, KeyError, PermissionError)


class _Run:
    """One scenario's choices: agents, services, the error raised, token usage."""

    def __init__(self, apps: Apps, rng: random.Random) -> None:
        self.apps, self.rng = apps, rng
        self.error = rng.choice(_ERRORS)

    def svc(self) -> str:
        return self.rng.choice(_SERVICES)

    def names(self, k: int) -> list[str]:
        return self.rng.sample(_AGENTS, k)

    def think(self, service: str) -> None:
        """The agent's own model call (root agents too: their usage counts)."""
        self.apps.model(service, self.rng.randint(5, 400), self.rng.randint(1, 120))

    def raise_(self) -> None:
        raise self.error(f"{self.error.__name__.lower()} after {self.rng.randint(1, 30)}s")

    def agent(self, name: str, body: Callable[[], Any] | None = None, guard: bool = False) -> Any:
        service = self.svc()

        def run() -> Any:
            self.think(service)
            if self.rng.random() < 0.5:
                self.apps.tool(service, "lookup")
            return body() if body is not None else None

        return self.apps.agent(service, name, run, guard=guard)

    def chain(self, names: list[str], last: Callable[[], Any]) -> Callable[[], Any]:
        """A body delegating down ``names`` in turn; the last agent runs ``last``."""
        if not names:
            return last
        inner = self.chain(names[1:], last)
        return lambda: self.agent(names[0], inner)


def _ok(r: _Run) -> Callable[[], Any]:
    a, b, c = r.names(3)
    return lambda: (r.agent(a, lambda: r.agent(c)), r.agent(b))


def _loop_ok(r: _Run) -> Callable[[], Any]:
    """A loop that finished ok: planner and critic call each other, then stop."""
    laps = r.rng.randint(1, 3)

    def lap(n: int) -> Callable[[], Any]:
        return lambda: r.agent("critic", (lambda: r.agent("planner", lap(n - 1))) if n else None)

    return lap(laps)


def _degraded(r: _Run) -> Callable[[], Any]:
    a, b = r.names(2)

    def body() -> None:
        try:
            r.agent(a, r.chain([b], r.raise_) if r.rng.random() < 0.5 else r.raise_)
        except Exception as exc:  # handled: the parent goes on with another source
            r.apps.handled(exc)
        r.agent("writer")

    return body


def _reraise(r: _Run) -> Callable[[], Any]:
    """The same exception carried up through 1-4 levels untouched."""
    return r.chain(r.names(r.rng.randint(1, 4)), r.raise_)


def _retyped(r: _Run) -> Callable[[], Any]:
    """Re-raised as another type at a middle level (``from e``, or during handling)."""
    top, middle, low = r.names(3)
    explicit = r.rng.random() < 0.7

    def middle_body() -> None:
        try:
            r.agent(low, r.raise_)
        except Exception as exc:
            if explicit:
                raise AppError(f"{low} failed: {exc}") from exc
            raise AppError(f"{low} failed")  # noqa: B904 (the implicit context is the point)

    return lambda: r.agent(top, lambda: r.agent(middle, middle_body))


def _tool(r: _Run) -> Callable[[], Any]:
    """A tool raising inside a delegated agent."""
    a, b = r.names(2)
    service = r.svc()

    def delegated() -> None:
        r.think(service)
        r.apps.tool(service, "refund_api", r.raise_)

    return lambda: r.agent(a, lambda: r.apps.agent(service, b, delegated))


def _tool_handled(r: _Run) -> Callable[[], Any]:
    """A tool raising in an agent that catches it and goes on (its model is told): degraded."""
    names = r.names(r.rng.randint(0, 2))
    service = r.svc()

    def body() -> None:
        try:
            r.apps.tool(service, "refund_api", r.raise_)
        except Exception as exc:  # handled: the error goes back to the model as the tool's result
            r.apps.handled(exc)
        r.think(service)

    if not names:  # the root agent's own tool
        return body
    return r.chain(names[:-1], lambda: r.apps.agent(service, names[-1], body))


def _parallel(r: _Run) -> Callable[[], Any]:
    """A fan-out in threads; one branch raises, the caller re-raises its exception."""
    branches = r.names(r.rng.randint(2, 4))
    bad = r.rng.randrange(len(branches))

    # Each branch draws from its own generator: threads interleave, the fleet stays seeded.
    runs = [_Run(r.apps, random.Random(r.rng.random())) for _ in branches]
    for run in runs:
        run.error = r.error

    def body() -> None:
        with ThreadPoolExecutor(len(branches)) as pool:
            futures = [
                pool.submit(
                    contextvars.copy_context().run,
                    runs[i].agent,
                    name,
                    runs[i].raise_ if i == bad else None,
                )
                for i, name in enumerate(branches)
            ]
            for future in futures:
                future.result()

    return body


def _guard(r: _Run) -> Callable[[], Any]:
    """A loop refused by the app's guard; circles of 1 to 3 agents."""
    loop = r.rng.sample(("planner", "critic", "writer"), r.rng.randint(1, 3))
    lead = r.names(1) if r.rng.random() < 0.5 else []
    lead = [n for n in lead if n not in loop]
    return _guarded(r, [*lead, *loop, loop[0]], 0)


def _guarded(r: _Run, names: list[str], i: int) -> Callable[[], Any]:
    if i == len(names):
        return lambda: None
    return lambda: r.agent(names[i], _guarded(r, names, i + 1), guard=True)


def _depth(r: _Run) -> Callable[[], Any]:
    """A loop with no guard, stopped deep down by the depth limit."""
    loop = r.rng.sample(("planner", "critic", "writer"), r.rng.randint(1, 3))

    def step(i: int) -> Callable[[], Any]:
        return lambda: r.agent(loop[i % len(loop)], step(i + 1))

    return step(0)


def _handoff(r: _Run) -> Callable[[], Any]:
    """Triage hands the conversation to an agent that raises."""
    target = r.rng.choice(("refunds", "billing"))
    service = r.svc()

    def triage() -> None:
        r.think(service)
        r.apps.transfer(service, target)

    def body() -> None:
        r.apps.agent(service, "triage", triage)
        r.agent(target, r.raise_)

    return body


def _root_fails(r: _Run) -> Callable[[], Any]:
    """The root agent raises on its own, after its callees ended ok."""
    a = r.names(1)[0]

    def body() -> None:
        r.agent(a)
        if r.rng.random() < 0.5:
            r.raise_()
        r.apps.tool(r.svc(), "send_reply", r.raise_)

    return body


#: The scenarios and their weights in a fleet.
SCENARIOS: Final[dict[str, tuple[float, Callable[[_Run], Callable[[], Any]]]]] = {
    "ok": (2.0, _ok),
    "loop_ok": (0.5, _loop_ok),
    "degraded": (1.0, _degraded),
    "reraise": (1.5, _reraise),
    "retyped": (1.0, _retyped),
    "tool": (1.0, _tool),
    "tool_handled": (1.0, _tool_handled),
    "parallel": (1.0, _parallel),
    "guard": (1.5, _guard),
    "depth": (0.7, _depth),
    "handoff": (0.5, _handoff),
    "root_fails": (0.5, _root_fails),
}


def otel_fleet(
    n: int, seed: int = 0, max_depth: int = 7
) -> tuple[list[ReadableSpan], dict[str, Truth]]:
    """Run ``n`` scenarios; return every span and each run's truth, by trace id (hex)."""
    exporter = InMemorySpanExporter()
    rng = random.Random(seed)
    apps = Apps(exporter, _SERVICES, typed=frozenset({"billing", "refunds"}), max_depth=max_depth)
    names = list(SCENARIOS)
    weights = [SCENARIOS[name][0] for name in names]
    truths: dict[str, Truth] = {}
    for _ in range(n):
        scenario = SCENARIOS[rng.choices(names, weights)[0]][1]
        r = _Run(apps, rng)
        before = len(exporter.get_finished_spans())
        truth = apps.run(r.svc(), rng.choice(("desk", "concierge", "planner")), scenario(r))
        root = exporter.get_finished_spans()[-1]
        assert len(exporter.get_finished_spans()) > before
        truth.trace_id = format(root.context.trace_id, "032x")
        truths[truth.trace_id] = truth
    return list(exporter.get_finished_spans()), truths
