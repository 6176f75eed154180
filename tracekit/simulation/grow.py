"""Grow one run's invocation tree from a scenario, laying out its times.

Each agent takes some of its steps in order and, between them, may call the
agents on its allow-list: as a ``delegate`` (it waits), a ``handoff`` (its
last act; the target finishes the run's work) or a background ``subagent``
(it carries on, and waits for or cancels the child before it ends). Random
calls never close a circle and never go deeper than the service allows: only
the scenario's forced path fails, so the ground truth is known by construction.
A failure travels up wrapped as ``AGENT_FAILED`` at each level, the child's
error as ``cause``; ``AGENT_RECURSION`` travels up unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tracekit.events import ErrorInfo
from tracekit.simulation.catalog import Service
from tracekit.simulation.cut import cut
from tracekit.simulation.model import Inv, Step
from tracekit.simulation.scenario import Scenario

__all__ = ["Grower"]

_CALL_CHANCE = (1.0, 0.7, 0.45, 0.2, 0.05)  # chance of a call after a step, by depth
_DELEGATE_NODES = ("delegate", "escalate", "consult")
_NO_SCENARIO = Scenario()


class Grower:
    """Grows runs of one service; ``new_id`` gives span ids (16 hex digits)."""

    def __init__(self, rng: random.Random, service: Service, new_id: Callable[[], str]) -> None:
        self.rng = rng
        self.r = rng.random  # a C call: much cheaper than randint in the hot loop
        self.service = service
        self.new_id = new_id
        self.origin: Inv | None = None

    def run(self, start: int, scenario: Scenario) -> Inv:
        """The root run of ``scenario``, beginning at ``start`` (ms)."""
        self.origin = None
        root = Inv(self.new_id(), self.service.entry, start)
        self._fill(root, (root.agent,), 0 if scenario.path else None, scenario)
        return root

    # -- one agent ------------------------------------------------------------
    def _fill(self, inv: Inv, chain: tuple[str, ...], hop: int | None, sc: Scenario) -> None:
        """Take the agent's steps and calls from ``inv.start``; set its end and outcome."""
        r = self.r  # locals: this loop makes most of a fleet's records
        spec = self.service.agents[inv.agent]
        steps = [s for s in spec.steps if r() < 0.8] or [spec.steps[-1]]
        count = len(steps)
        forced_at = int(r() * (count + 1)) if hop is not None else -1
        can_call = bool(spec.calls) and inv.depth < self.service.max_depth
        chance = _CALL_CHANCE[min(inv.depth, 4)]
        items = inv.items
        pending: list[Inv] = []
        t = inv.start + 1 + int(r() * 3)
        for index in range(count + 1):
            if index == forced_at:
                assert hop is not None
                t, failed = self._forced(inv, t, chain, hop, sc, pending)
                if failed:
                    return
            if index == count:
                break
            end = t + 8 + int(r() * 890)
            items.append(Step(steps[index], t, end))
            t = end + 1 + int(r() * 4)
            if r() < (chance if index < count - 1 else chance * 0.5) and can_call:
                last = index == count - 1 and forced_at <= index
                t = self._random_call(inv, t, chain, pending, last=last)
                if inv.end is not None:  # a handoff ended this agent's part
                    return
        self._finish(inv, t, pending)

    def _step(self, inv: Inv, name: str, t: int, ok: bool = True) -> int:
        r = self.r
        end = t + 8 + int(r() * 890)
        inv.items.append(Step(name, t, end, ok))
        return end + 1 + int(r() * 4)

    def _finish(self, inv: Inv, t: int, pending: list[Inv]) -> None:
        """End ok: cancel or wait for the background children first."""
        if not pending:
            inv.end = t
            return
        rng = self.rng
        live = [c for c in pending if c.end is not None and c.end >= t]
        for child in [c for c in live if rng.random() < 0.1]:
            cut(child, t, cancel=True)
            t = self._step(inv, "cancel_subagent", t)
            live.remove(child)
        if live:
            # A child may have ended while the cancellations ran: the wait never ends before it starts.
            until = max(max(c.end or t for c in live) + 1, t)
            inv.items.append(Step("wait_subagents", t, until))
            t = until + 1 + int(rng.random() * 4)
        inv.end = t

    def _fail(self, inv: Inv, t: int, error: ErrorInfo, pending: list[Inv]) -> None:
        """End in error at ``t``: background children still running are cancelled."""
        for child in pending:
            if child.end is not None and child.end > t:
                cut(child, t, cancel=True)
        inv.end, inv.status, inv.error = t, "error", error

    # -- calls ----------------------------------------------------------------
    def _child(self, inv: Inv, agent: str, t: int, kind: str) -> Inv:
        slug = agent.replace("-", "_")
        if kind == "handoff":
            node = f"transfer_to_{slug}"
        elif kind == "subagent":
            node = "spawn_subagent"
        else:
            roll = int(self.r() * 4)
            node = _DELEGATE_NODES[roll] if roll < 3 else f"ask_{slug}"
        child = Inv(self.new_id(), agent, t, inv.depth + 1, node, kind, inv)
        inv.items.append(child)
        return child

    def _random_call(
        self, inv: Inv, t: int, chain: tuple[str, ...], pending: list[Inv], *, last: bool
    ) -> int:
        """An ordinary call that ends ok (or is cancelled, for a background child)."""
        rng = self.rng
        callees = [c for c in self.service.agents[inv.agent].calls if c not in chain]
        if not callees or inv.depth >= self.service.max_depth:
            return t
        roll = rng.random()
        kind = (
            "handoff"
            if last and roll < 0.2 and not pending
            else "subagent"
            if roll > 0.8
            else "delegate"
        )
        child = self._child(inv, callees[int(rng.random() * len(callees))], t, kind)
        self._fill(child, (*chain, child.agent), None, _NO_SCENARIO)
        assert child.end is not None
        child.tool_end = child.end
        if kind == "subagent":
            child.tool_end = t + 1
            pending.append(child)
            return t + 2 + int(rng.random() * 5)
        if kind == "handoff":
            self._finish(inv, child.end + 1, pending)
        return child.end + 1 + int(rng.random() * 4)

    def _forced(
        self, inv: Inv, t: int, chain: tuple[str, ...], hop: int, sc: Scenario, pending: list[Inv]
    ) -> tuple[int, bool]:
        """The scenario's step at this agent; returns the new time and whether it failed."""
        assert sc.terminal is not None
        last = hop == len(sc.path) - 1
        if last and sc.terminal.refused is None:
            t = self._step(inv, self.rng.choice(self.service.agents[inv.agent].steps), t, ok=False)
            self._fail(
                inv, t, ErrorInfo(code=sc.terminal.code, message=sc.terminal.message), pending
            )
            self.origin = inv
            return t, True
        if last:
            child = self._refused(inv, t, sc)
        else:
            kind = "handoff" if self.rng.random() < 0.15 else "delegate"
            child = self._child(inv, sc.path[hop + 1], t, kind)
            self._fill(child, (*chain, child.agent), hop + 1, sc)
        assert child.end is not None
        child.tool_end = child.end
        t = child.end + 1 + int(self.r() * 4)
        if not child.failed:
            return t, False
        if hop == sc.handled_at:
            return self._step(inv, "fallback", t), False
        error = child.error
        assert error is not None
        if error.code != "AGENT_RECURSION":
            message = f"delegated agent {child.agent} failed ({error.code})"
            error = ErrorInfo(code="AGENT_FAILED", message=message, cause=error)
        self._fail(inv, t, error, pending)
        return t, True

    def _refused(self, inv: Inv, t: int, sc: Scenario) -> Inv:
        terminal = sc.terminal
        assert terminal is not None and terminal.refused is not None
        child = self._child(inv, terminal.refused, t, "delegate")
        chain = list(terminal.chain) if terminal.chain else None
        child.end, child.status = t, "refused"
        child.error = ErrorInfo(code=terminal.code, message=terminal.message, chain=chain)
        self.origin = child
        return child
