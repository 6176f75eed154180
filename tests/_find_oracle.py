"""The answers to structural queries, from the simulator's own invocation trees.

The simulator grows each run as a tree of :class:`~tracekit.simulation.model.Inv`
before it writes a record; replaying it with the same seed gives those trees.
:func:`expected` walks them in plain Python (no SQL, no query parser), so a
golden test compares ``Store.find`` against the ground truth, not against itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests._store_helpers import line, write
from tracekit.simulation import SimulationRates, simulate
from tracekit.simulation.model import Inv
from tracekit.simulation.simulator import DEFAULT_START, DEFAULT_WINDOW_MS, _Fleet, _start_ms

Node = Inv
Test = Callable[[Inv, "Run"], bool]


@dataclass(frozen=True)
class Run:
    """One simulated run: its root and service."""

    root: Inv
    service: str


def simulated_fleet(path: Path, runs: int, seed: int) -> list[Run]:
    """Write the fleet to ``path`` and return the same runs' trees, as grown."""
    simulate(path, runs=runs, seed=seed)
    fleet = _Fleet(seed, SimulationRates(), _start_ms(DEFAULT_START, DEFAULT_WINDOW_MS))
    gap = DEFAULT_WINDOW_MS / runs
    out = []
    for index in range(runs):
        run = fleet.next_run(index, gap)
        out.append(Run(run.root, run.service))
    return out


# --- what a node is, in the store's words --------------------------------------


def status(inv: Inv) -> str:
    if inv.end is None:
        return "running"
    if inv.parent is None:  # a root run: ok or error
        return "ok" if inv.status == "ok" else "error"
    return inv.status


def code(inv: Inv) -> str | None:
    return inv.error.code if inv.end is not None and inv.error is not None else None


def duration(inv: Inv) -> float | None:
    return float(inv.end - inv.start) if inv.end is not None else None


def kind(inv: Inv) -> str | None:
    return None if inv.parent is None else inv.kind


# --- steps and edges --------------------------------------------------------------


def step(agent: str | None = None, **want: Any) -> Test:
    """A node test: this agent (None: any) and each ``field=value`` (a callable tests)."""
    fields: dict[str, Callable[[Inv, Run], Any]] = {
        "status": lambda n, r: status(n),
        "code": lambda n, r: code(n),
        "duration": lambda n, r: duration(n),
        "kind": lambda n, r: kind(n),
        "service": lambda n, r: r.service,
        "depth": lambda n, r: n.depth,
    }

    def test(node: Inv, run: Run) -> bool:
        if agent is not None and node.agent != agent:
            return False
        for name, value in want.items():
            got = fields[name](node, run)
            if callable(value):  # given None when the node has no value
                if not value(got):
                    return False
            elif got != value:
                return False
        return True

    return test


def children(node: Inv) -> Iterator[Inv]:
    for item in node.items:
        if type(item) is Inv:
            yield item


def below(node: Inv, edge: str) -> Iterator[Inv]:
    """The nodes an edge reaches from ``node``."""
    if edge == ">":
        yield from children(node)
    elif edge == "~>":
        yield from (c for c in children(node) if c.kind == "handoff")
    elif edge == ">>":
        yield from node.walk()[1:]
    else:  # ~>>: down handoff edges only
        for child in children(node):
            if child.kind == "handoff":
                yield child
                yield from below(child, "~>>")


def expected(
    runs: list[Run], steps: list[Test], edges: list[str]
) -> set[tuple[str, tuple[str, ...]]]:
    """Every (run id, path of ids) the steps and edges match, by walking the trees."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    for run in runs:
        for node in run.root.walk():
            if steps[0](node, run):
                for path in _extend(run, [node], steps[1:], edges):
                    found.add((run.root.id, tuple(n.id for n in path)))
    return found


def _extend(run: Run, path: list[Inv], steps: list[Test], edges: list[str]) -> Iterator[list[Inv]]:
    if not steps:
        yield path
        return
    for nxt in below(path[-1], edges[0]):
        if steps[0](nxt, run):
            yield from _extend(run, [*path, nxt], steps[1:], edges[1:])


def recursion_refusals(
    runs: list[Run], through: str | None = None
) -> set[tuple[str, tuple[str, ...]]]:
    """The invocation each run refused for closing a circle (through an agent, if given)."""
    found = set()
    for run in runs:
        for node in run.root.walk()[1:]:
            err = node.error
            if err is None or node.status != "refused" or err.code != "AGENT_RECURSION":
                continue
            if through is None or through in (err.chain or []):
                found.add((run.root.id, (node.id,)))
    return found


# --- hand-made: names that break naive quoting, escaping and CSV ----------------

HOSTILE = [
    "a > b",
    'say "hi"',
    "[x]",
    "ünïcødé",
    "red\x1b[31m",
    "circle",
    "*",
    "it's",
    "日本",
    "=cmd|' /C calc'!A0",
]


def hostile_trace(path: Path) -> Path:
    """A root ``front`` that calls each hostile agent, which hands off to the next."""
    lines = [line({"type": "run.start", "ts": 1, "runId": "r", "agent": "front", "service": "s"})]
    parent = "r"
    for n, agent in enumerate(HOSTILE):
        kind = "delegate" if n == 0 else "handoff"
        common = {"invocationId": f"i{n}", "runId": f"c{n}", "parentRunId": parent, "agent": agent}
        lines.append(line({"type": "enter", "ts": 2 + n, "kind": kind, **common}))
        lines.append(line({"type": "exit", "ts": 40 - n, "ok": True, "durationMs": 1, **common}))
        parent = f"c{n}"
    lines.append(line({"type": "run.end", "ts": 50, "runId": "r", "ok": True, "durationMs": 49}))
    return write(path, lines)
